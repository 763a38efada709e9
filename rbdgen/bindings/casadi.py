"""module.casadi: a generated module's functions as casadi.Function objects through CasADi's
external-function interface (casadi.c). The same file in every module (a copy of
rbdgen/bindings/casadi.py, as _casadi.py), imported only when module.casadi is called."""


def external(m, function, frame=None, reference=None):
    """module.casadi(function, frame, reference) of the module `m` (its documentation)."""
    try:
        import casadi as _casadi
    except ImportError:
        raise ImportError("casadi is not installed: pip install casadi (or rbdgen[casadi])") from None
    if function in m._FAMILIES:
        if frame is None:
            raise ValueError(f"{function} is a function of a frame: pass frame= (a name or index in `frames`)")
        fname = function if m._FAMILIES[function] is None else f"{function}_{reference or m._FAMILIES[function]}"
        if reference is not None and (m._FAMILIES[function] is None or reference not in m._REFERENCES):
            raise ValueError(f"reference {reference!r} is unknown for {function}"
                             + (f"; use one of {', '.join(m._REFERENCES)}" if m._FAMILIES[function] else " (it has none)"))
        if fname not in m._NAMES:
            raise ValueError(f"this module was built without {fname}; rebuild it with that function")
        m._frame(frame)   # the one-line error for an unknown frame
        index = frame if not isinstance(frame, str) else m.frames.index(frame)
        body = m._FRAME_TABLE[m.frames[index]][0]
        if body not in (m._META["functions"][fname]["bodies"] or ()):
            raise ValueError(f"frame {m.frames[index]!r}: this build has no {fname} program for its body; "
                             "rebuild with the frame served (rbdgen build --frames)")
        return _casadi.external(f"{m._META['module']}_{fname}_f{index}", m._ext.__file__)
    if frame is not None or reference is not None:
        raise ValueError(f"{function!r} is not a function of a frame: it takes no frame or reference")
    d = m._DESCRIPTIONS.get(function)
    if d is not None and d.per_body:
        raise ValueError(f"{function!r} is a function of a frame: module.casadi({d.family!r}, frame=..."
                         f"{', reference=...' if d.reference else ''})")
    if d is None:
        choices = sorted(n for n, d in m._DESCRIPTIONS.items() if not d.per_body) + sorted(m._FAMILIES)
        raise ValueError(f"{function!r} is not a function of this module; {m._contact.close_names(function, choices)}"
                         f"it has {', '.join(choices)}")
    return _casadi.external(f"{m._META['module']}_{function}", m._ext.__file__)
