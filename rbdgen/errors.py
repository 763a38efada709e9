"""One error hierarchy. Every message is one line naming the element and the fix."""


class RbdgenError(Exception):
    """Base of every error rbdgen raises on purpose."""


class URDFError(RbdgenError):
    """The URDF file is missing, malformed or describes an impossible robot."""


class ModelError(RbdgenError):
    """A model built in Python (or from a URDF) is inconsistent."""


class CodegenError(RbdgenError):
    """The symbolic run or the rendering of C failed."""


class InertiaWarning(UserWarning):
    """A link's inertia is physically impossible (not positive semi-definite, or its principal
    moments break the triangle inequality); the model is loaded as given, as Pinocchio does."""


class BuildError(RbdgenError):
    """Compiling a generated module failed; carries the command and the compiler output."""

    def __init__(self, message, command=None, output=""):
        super().__init__(message)
        self.command = command
        self.output = output

    def __str__(self):
        text = super().__str__()
        if self.output:
            text += "\n" + self.output
        return text


def did_you_mean(name, choices, otherwise=""):
    """'did you mean 'a', 'b'?' for the names among `choices` close to `name`, else `otherwise`
    (the binding's copy, for generated modules: rbdgen.bindings.contact.close_names)."""
    import difflib
    close = difflib.get_close_matches(str(name), list(choices), n=3)
    return f"did you mean {', '.join(map(repr, close))}?" if close else otherwise
