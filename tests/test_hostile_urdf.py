"""Hostile URDFs (issue 10): a seeded generator of malformed and odd files, each of which
either loads or raises URDFError with a one-line message, never another exception; then one
test per parsing rule (numbers, encodings, duplicate elements, inertias, overflow, names)."""

import copy
import functools
import math
import random
import warnings
import xml.etree.ElementTree as ET

import pytest

import rbdgen
from rbdgen import ModelBuilder, ModelError, URDFError
from rbdgen.errors import InertiaWarning
from rbdgen.model import Revolute
from rbdgen.model.urdf import model_from_urdf_string
from rbdgen.spatial import Inertia, Transform

from helpers import robot_path

INERTIA = '<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0.001" ixz="-0.002" iyz="0.003"/>'

SMALL = f"""<?xml version="1.0" encoding="utf-8"?>
<robot name="hostile">
  <link name="base"><inertial><origin xyz="0 0 0.05" rpy="0 0 0"/><mass value="2"/>{INERTIA}</inertial>
    <visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>
  <link name="upper"><inertial><origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.2 0.5"/><mass value="1.5"/>{INERTIA}
    </inertial></link>
  <link name="tool"><inertial><origin xyz="0.05 0 0.2"/><mass value="0.8"/>{INERTIA}</inertial></link>
  <link name="fore"><inertial><mass value="0.5"/>{INERTIA}</inertial></link>
  <link name="finger_a"><inertial><mass value="0.1"/>{INERTIA}</inertial></link>
  <link name="finger_b"><inertial><mass value="0.1"/>{INERTIA}</inertial></link>
  <link name="slider"><inertial><mass value="0.3"/>{INERTIA}</inertial></link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 0 1"/>
    <limit effort="10" velocity="2" lower="-3" upper="3"/><dynamics damping="0.1" friction="0"/></joint>
  <joint name="mount" type="fixed"><parent link="upper"/><child link="tool"/>
    <origin xyz="0.4 0.1 -0.05" rpy="0.5 -0.3 0.9"/></joint>
  <joint name="elbow" type="continuous"><parent link="tool"/><child link="fore"/>
    <origin xyz="0.1 0 0.2"/><axis xyz="0 1 0"/></joint>
  <joint name="finger_a_joint" type="prismatic"><parent link="fore"/><child link="finger_a"/><axis xyz="1 0 0"/>
    <limit effort="1" velocity="1" lower="0" upper="0.04"/></joint>
  <joint name="finger_b_joint" type="prismatic"><parent link="fore"/><child link="finger_b"/><axis xyz="-1 0 0"/>
    <limit effort="1" velocity="1" lower="0" upper="0.04"/>
    <mimic joint="finger_a_joint" multiplier="1" offset="0"/></joint>
  <joint name="slide" type="planar"><parent link="base"/><child link="slider"/><axis xyz="0 0 1"/></joint>
  <joint name="tip_joint" type="fixed"><parent link="fore"/><child link="tip"/><origin xyz="0 0 0.25"/></joint>
</robot>
"""

REAL = ("ur5", "panda", "double_pendulum_continuous", "solo12")
NUMERIC = ("xyz", "rpy", "value", "ixx", "ixy", "ixz", "iyy", "iyz", "izz", "lower", "upper", "effort",
           "velocity", "multiplier", "offset", "damping", "friction", "size")
BAD_NUMBERS = ("", " ", "1_000", "1__0", "_1", "\u0661\u0662", "\uff11", "\u0967", "\u00bd", "\u00b2", "0x10", "0b1",
               "0o7", "1e", "1e+", "e5", ".", "+", "-", "--1", "+-1", "1.2.3", "1,5", "1 2 3 4", "1j", "nan", "NaN",
               "-nan", "inf", "-inf", "Infinity", "infinity", "1e999", "-1e999", "1e-400", "1e308", "-1e308",
               "1e200", "4.9e-324", "\u0131nf", "1\u00a02\u00a03", "1\t2\t3", "\uff11 \uff12 \uff13", "0 0",
               "0 0 0 0", "abc", "None", "true", "1e5000000000", "9" * 400, "0." + "0" * 400 + "1", "1 2 nan",
               "0 0 0", "0 0 1e-300", "1e300 1e300 1e300", "-0", "+.5", "5.", "1E3", " 1  2  3 ", "\u2212" + "1")
WEIRD_NAMES = ("", " ", "a b", "a\nb", "a\r\nb", "\t", "'", '"', "it's \"q\"", "<&>", "\u2028", "\x85", "\u200b",
               "\u95a2\u7bc0", "\U0001f916", "x" * 10000, "root_joint", "universe", "-", "0", "a/b", "..", "\\",
               "{}", "%s", "{name}", "\ufeff", "\U0010ffff", "\u03a9" * 50, "base", "shoulder", "\x1b[31mred")
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar", "", "REVOLUTE", "ball",
               "spherical", "revolute ", "unknown", "\u0280evolute")
ENCODINGS = ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "latin-1", "cp1252", "ascii", "shift_jis",
             "euc-jp", "gb18030", "big5", "cp037", "utf-7", "utf-8-sig", "iso-2022-jp", "koi8-r", "mac-roman")
DECLARED = ("UTF-8", "UTF-16", "utf-32", "latin-1", "foo-bar", "utf-9", "x" * 200, "rot13", "hex", "base64", "zlib",
            "punycode", "idna", "undefined", "utf-7", "shift_jis", "euc-jp", "gb18030", "big5", "cp037", "mbcs",
            "unicode_escape", "raw_unicode_escape", "utf_8_sig", "ascii", "", "ISO-8859-1", "windows-1252")
GARBAGE = (b"", b" ", b"\n\n", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00" * 16, b"<", b">", b"<robot", b"<robot/>",
           b'<robot name="r"/>', b"<robot><link/></robot>", b"<?xml version='1.0'?>", b"<sdf/>", b"<!-- -->",
           b"<robot><link name='a'></robot>", b"<r:robot xmlns:r='urn:x'><r:link name='a'/></r:robot>",
           "<robot name='\ud800'><link name='a'/></robot>",  # a str with a lone surrogate
           b"<?xml version='1.0'?><!DOCTYPE r [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><robot name='&x;'/>",
           b"<?xml version='1.0'?><!DOCTYPE r [<!ENTITY n '1.5'>]><robot><link name='a'><inertial>"
           b"<mass value='&n;'/></inertial></link></robot>",
           b"<robot>" + b"<a>" * 20000 + b"</a>" * 20000 + b"</robot>",
           b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"PK\x03\x04\x14\x00", b"%PDF-1.4")


def _bomb(depth):
    """Entities that expand tenfold per level: the XML parser must refuse them, not hang."""
    entities = "<!ENTITY e0 'aaaaaaaaaa'>" + "".join(f"<!ENTITY e{k} '{f'&e{k - 1};' * 10}'>" for k in range(1, depth))
    return f"<?xml version='1.0'?><!DOCTYPE robot [{entities}]><robot name='&e{depth - 1};'><link name='a'/></robot>"


@functools.lru_cache(maxsize=None)
def base_text(name):
    if name == "small":
        return SMALL
    with open(robot_path(name), encoding="utf-8") as f:
        return f.read()


def base_tree(rng):
    return ET.fromstring(base_text(rng.choice(("small", "small") + REAL)))


def serialize(root):
    return ET.tostring(root, encoding="unicode")


def random_number_text(rng):
    """One attribute value: bad words, extreme magnitudes or ordinary numbers, 1 to 4 of them."""
    if rng.random() < 0.5:
        return rng.choice(BAD_NUMBERS)
    words = []
    for _ in range(rng.choice((1, 3, 3, 2, 4))):
        kind = rng.random()
        if kind < 0.3:
            words.append(f"{rng.uniform(-2, 2):.6g}")
        elif kind < 0.6:
            words.append(f"{rng.choice('+-')}1e{rng.randint(-400, 400)}")
        elif kind < 0.8:
            words.append(rng.choice(BAD_NUMBERS[:40]))
        else:
            words.append(rng.choice(("0", "-0", "1", "-1", "1e-12", "1e-13", "3.141592653589793")))
    return " ".join(words)


# ---------------------------------------------------------------- mutations of a tree -----

def elements(root):
    return [el for el in root.iter() if el is not root]


def parent_map(root):
    return {child: parent for parent in root.iter() for child in parent}


def delete_element(rng, root):
    el = rng.choice(elements(root))
    parent_map(root)[el].remove(el)
    return f"deleted <{el.tag}>"


def duplicate_element(rng, root):
    el = rng.choice([e for e in elements(root) if e.tag not in ("visual", "collision", "geometry", "mesh")]
                    or elements(root))
    parent = parent_map(root)[el]
    twin = copy.deepcopy(el)
    if twin.attrib and rng.random() < 0.5:
        key = rng.choice(sorted(twin.attrib))
        twin.set(key, random_number_text(rng) if key in NUMERIC else rng.choice(WEIRD_NAMES))
    parent.insert(list(parent).index(el) + rng.choice((0, 1)), twin)
    return f"duplicated <{el.tag}>"


def delete_attribute(rng, root):
    candidates = [e for e in elements(root) if e.attrib]
    el = rng.choice(candidates)
    key = rng.choice(sorted(el.attrib))
    del el.attrib[key]
    return f"deleted {key}= of <{el.tag}>"


def bad_number(rng, root):
    candidates = [(e, k) for e in elements(root) for k in e.attrib if k in NUMERIC]
    el, key = rng.choice(candidates)
    el.set(key, random_number_text(rng))
    return f"<{el.tag} {key}={el.get(key)!r}>"


def weird_name(rng, root):
    el = rng.choice([e for e in root if e.tag in ("link", "joint")])
    old, new = el.get("name"), rng.choice(WEIRD_NAMES)
    el.set("name", new)
    if rng.random() < 0.7:  # keep the references consistent, so that the name itself is tested
        for ref in root.iter():
            if ref.tag in ("parent", "child") and el.tag == "link" and ref.get("link") == old:
                ref.set("link", new)
            if ref.tag == "mimic" and el.tag == "joint" and ref.get("joint") == old:
                ref.set("joint", new)
    return f"{el.tag} {old!r} renamed {new[:20]!r}"


def weird_type(rng, root):
    el = rng.choice([e for e in root if e.tag == "joint"])
    el.set("type", rng.choice(JOINT_TYPES))
    return f"joint {el.get('name')!r} type {el.get('type')!r}"


def rewire(rng, root):
    """Loops, self-loops, second parents, missing links."""
    links = [e.get("name") for e in root if e.tag == "link"] + ["ghost", ""]
    refs = [e for e in root.iter() if e.tag in ("parent", "child")]
    el = rng.choice(refs)
    el.set("link", rng.choice(links))
    return f"<{el.tag} link={el.get('link')!r}>"


def axis(rng, root):
    joints = [e for e in root if e.tag == "joint"]
    joint = rng.choice(joints)
    el = joint.find("axis")
    if el is None:
        el = ET.SubElement(joint, "axis")
    el.set("xyz", rng.choice(("0 0 0", "1e-13 0 0", "1e-300 0 0", "1e300 1e300 1e300", "1e308 1e308 0", "-0 -0 -0",
                              "0 0 nan", "1 1 1", "0 0 -1", "4.9e-324 0 0", "1e-12 1e-12 1e-12")))
    return f"joint {joint.get('name')!r} axis {el.get('xyz')!r}"


def invalid_inertia(rng, root):
    inertias = [e for e in root.iter() if e.tag == "inertia"]
    if not inertias:
        return "no inertia"
    el = rng.choice(inertias)
    moments = rng.choice(((10, 1, 1), (1, 1, -1), (-1, -1, -1), (0, 0, 0), (1, 1, 2), (1e300, 1e300, 1e300),
                          (1e-20, 0, 0), (1, 2, 3)))
    products = rng.choice(((0, 0, 0), (5, 0, 0), (0.5, 0.5, 0.5), (-1e300, 0, 0), (1e-9, 1e-9, 1e-9)))
    for key, value in zip(("ixx", "iyy", "izz", "ixy", "ixz", "iyz"), moments + products):
        el.set(key, repr(float(value)))
    return f"inertia {moments} {products}"


def overflow(rng, root):
    el = rng.choice([e for e in root.iter() if e.tag in ("origin", "mass")])
    if el.tag == "mass":
        el.set("value", rng.choice(("1e308", "1.7e308", "1e200", "1e-320")))
    else:
        el.set("xyz", rng.choice(("1e200 0 0", "1e308 1e308 1e308", "-1.7e308 0 0", "1e160 1e160 1e160")))
    return f"<{el.tag} {dict(el.attrib)}>"


TREE_MUTATIONS = (delete_element, duplicate_element, delete_attribute, bad_number, weird_name, weird_type, rewire,
                  axis, invalid_inertia, overflow)


# ---------------------------------------------------------------- the case families -------

def mutated(mutation):
    def family(rng):
        root = base_tree(rng)
        what = mutation(rng, root)
        return what, serialize(root)
    family.__name__ = mutation.__name__
    return family


def combined(rng):
    root = base_tree(rng)
    done = [rng.choice(TREE_MUTATIONS)(rng, root) for _ in range(rng.randint(2, 5))]
    return "; ".join(done), serialize(root)


def encoding(rng):
    root = base_tree(rng)
    if rng.random() < 0.5:
        root[0].set("name", rng.choice(("\u00e9l\u00e9ment", "\u95a2\u7bc0", "\u041f\u0440\u0438", "plain")))
    body = serialize(root)
    codec, declared = rng.choice(ENCODINGS), rng.choice(DECLARED + ENCODINGS)
    decl = f'<?xml version="1.0" encoding="{declared}"?>\n' if rng.random() < 0.8 else ""
    data = (decl + body).encode(codec, errors="replace")
    return f"{codec} bytes declared {declared[:20]!r}", data


def bytes_fuzz(rng):
    data = bytearray(serialize(base_tree(rng)).encode())
    for _ in range(rng.randint(1, 8)):
        op, at = rng.random(), rng.randrange(len(data))
        if op < 0.3:
            data[at] = rng.randrange(256)
        elif op < 0.5:
            data.insert(at, rng.choice(b"<>&\"'=/ \x00\xff\xc3"))
        elif op < 0.7:
            del data[at:at + rng.randint(1, 50)]
        elif op < 0.85:
            data[at:at] = data[at:at + rng.randint(1, 200)]
        else:
            del data[at:]
    return "byte edits", bytes(data)


def garbage(rng):
    kind = rng.random()
    if kind < 0.45:
        blob = rng.choice(GARBAGE)
        return f"fixed garbage {blob[:20]!r}", blob
    if kind < 0.6:
        return "random bytes", bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    if kind < 0.75:
        return "random text", "".join(rng.choice("<>/=\"' robotlinkjointname&;\n\t\u00e9") for _ in range(200))
    if kind < 0.85:
        depth = rng.randint(3, 9)
        return f"entity expansion 10^{depth}", _bomb(depth)
    return "truncated", base_text(rng.choice(REAL)).encode()[:rng.randrange(2000)]


def structure(rng):
    """A random tree (sometimes with loops, two parents or missing links) of up to 300 links."""
    n = rng.choice((1, 2, 3, 10, 50, 300))
    types = ("revolute", "continuous", "prismatic", "fixed", "fixed", "planar", "floating")
    parts = ['<robot name="random">']
    parts += [f'<link name="l{k}"><inertial><mass value="{rng.uniform(0, 2):.3f}"/>{INERTIA}</inertial></link>'
              for k in range(n)]
    for k in range(1, n):
        parent = rng.randrange(k)
        roll = rng.random()
        if roll < 0.03:
            parent = rng.randrange(k, n)              # may close a loop
        elif roll < 0.05:
            parent = f"missing{k}"
        child = k if rng.random() > 0.02 else rng.randrange(n)  # a second parent or a self loop
        parts.append(f'<joint name="j{rng.randrange(n) if rng.random() < 0.02 else k}" type="{rng.choice(types)}">'
                     f'<parent link="{parent if isinstance(parent, str) else f"l{parent}"}"/><child link="l{child}"/>'
                     f'<origin xyz="0 0 0.1" rpy="0.1 0 0"/><axis xyz="0 1 0"/>'
                     f'<limit effort="1" velocity="1" lower="-1" upper="1"/></joint>')
    parts.append("</robot>")
    return f"{n} links", "\n".join(parts)


FAMILIES = {f.__name__: f for f in [mutated(m) for m in TREE_MUTATIONS] + [combined, encoding, bytes_fuzz,
                                                                        garbage, structure]}
CASES_PER_FAMILY = 40   # 15 families: 600 cases


def case(family, k):
    """Case k of a family: (what, text or bytes, load options); seeded by its name alone."""
    rng = random.Random(f"{family}-{k}")
    what, data = FAMILIES[family](rng)
    if rng.random() < 0.5:
        data = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data
    options = dict(floating_base=rng.random() < 0.3, strict=rng.random() < 0.2, mimic=rng.random() < 0.25)
    return what, data, options


def one_line(text):
    return bool(text) and "\n" not in text and "\r" not in text and len(text.splitlines()) == 1


def load_or_refuse(data, **options):
    """'loaded' or 'refused'; anything else than a model or a one-line URDFError fails."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = model_from_urdf_string(data, source="hostile.urdf", **options)
        except URDFError as exc:
            assert one_line(str(exc)), f"URDFError message is not one line: {str(exc)[:300]!r}"
            return "refused"
    for w in caught:
        assert issubclass(w.category, UserWarning) and one_line(str(w.message)), f"bad warning {w}"
    assert len(caught) <= 2, f"{len(caught)} warnings for one URDF"
    for I in model.inertia:
        assert all(math.isfinite(x) for x in (I.m, *I.h, *(e for row in I.I for e in row)))
    for X in [*model.X_T, *(f.placement for f in model.frames)]:
        assert all(math.isfinite(x) for x in (*X.r, *(e for row in X.E for e in row)))
    return "loaded"


def test_generator_is_seeded_and_large():
    assert len(FAMILIES) * CASES_PER_FAMILY >= 500
    assert case("combined", 3) == case("combined", 3)
    assert case("combined", 3)[1] != case("combined", 4)[1]


# Families whose cases must sometimes load and sometimes be refused (the others are mostly refused
# or mostly loaded, depending on luck): a generator that only ever produced one outcome tests little.
BOTH_OUTCOMES = ("delete_element", "bad_number", "weird_name", "invalid_inertia", "combined", "encoding", "structure")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_hostile_urdfs_load_or_raise_one_line_urdf_error(family):
    outcomes = []
    for k in range(CASES_PER_FAMILY):
        what, data, options = case(family, k)
        try:
            outcomes.append(load_or_refuse(data, **options))
        except AssertionError as exc:
            raise AssertionError(f"case {family}-{k} ({what[:80]}, {options}): {exc}") from None
        except Exception as exc:
            pytest.fail(f"case {family}-{k} ({what[:80]}, {options}): {type(exc).__name__}: {str(exc)[:300]}")
    if family in BOTH_OUTCOMES:
        assert {"loaded", "refused"} <= set(outcomes), f"{family}: only {set(outcomes)}"


def test_deep_chain_of_ten_thousand_links():
    n = 10000
    inertial = f'<inertial><mass value="0.01"/>{INERTIA}</inertial>'
    parts = ['<robot name="deep">'] + [f'<link name="l{k}">{inertial if k % 10 == 0 else ""}</link>' for k in range(n)]
    for k in range(1, n):  # revolute every 20th link, fixed otherwise
        jtype = "revolute" if k % 20 == 0 else "fixed"
        parts.append(f'<joint name="j{k:05d}" type="{jtype}"><parent link="l{k - 1}"/><child link="l{k}"/>'
                     f'<origin xyz="0 0 0.001"/><axis xyz="0 1 0"/></joint>')
    model = model_from_urdf_string("\n".join(parts + ["</robot>"]))
    assert model.nv == (n - 1) // 20 and len(model.frames) == n
    assert model.frame(f"l{n - 1}").placement.r[2] == pytest.approx(0.019)
    # the same chain closed into a loop is refused
    looped = "\n".join(parts + ['<joint name="back" type="fixed"><parent link="l9999"/><child link="l0"/></joint>',
                                "</robot>"])
    with pytest.raises(URDFError, match="loop"):
        model_from_urdf_string(looped)


# ---------------------------------------------------------------- one test per rule -------

def urdf(fore_inertial="", elbow_extra='<axis xyz="0 1 0"/>', upper_inertia=INERTIA, fore_name="fore"):
    """base -> shoulder (revolute) -> upper -> elbow (revolute) -> fore, with pieces to replace."""
    fore_inertial = fore_inertial or f'<inertial><mass value="1"/>{INERTIA}</inertial>'
    return (f'<robot name="r"><link name="base"/>'
            f'<link name="upper"><inertial><mass value="1"/>{upper_inertia}</inertial></link>'
            f'<link name="{fore_name}">{fore_inertial}</link>'
            f'<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>'
            f'<axis xyz="0 0 1"/></joint>'
            f'<joint name="elbow" type="revolute"><parent link="upper"/><child link="{fore_name}"/>'
            f'{elbow_extra}</joint></robot>')


def refused(text, *names, **options):
    with pytest.raises(URDFError) as info:
        model_from_urdf_string(text, **options)
    message = str(info.value)
    assert one_line(message), message
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    return message


def tensor(ixx, iyy, izz, ixy=0, ixz=0, iyz=0):
    return f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="{ixy}" ixz="{ixz}" iyz="{iyz}"/>'


@pytest.mark.parametrize("moments, problem", [
    ((10, 1, 1), "triangle inequality"),
    ((1, 3, 1.5), "triangle inequality"),
    ((1, 1, -1), "positive semi-definite"),
    ((-0.01, -0.01, -0.01), "positive semi-definite"),
    ((0.01, 0.01, 0.01, 0.05), "positive semi-definite"),   # products too large
])
def test_invalid_inertia_warns_and_strict_refuses(moments, problem):
    text = urdf(upper_inertia=tensor(*moments))
    with pytest.warns(InertiaWarning) as caught:
        model = model_from_urdf_string(text)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert one_line(message) and "'upper'" in message and problem in message and "strict" in message
    assert model.nv == 2 and model.inertia[0].I[0][0] == pytest.approx(moments[0])  # loaded as given
    assert issubclass(InertiaWarning, UserWarning)
    refused(text, "'upper'", problem, strict=True)


@pytest.mark.parametrize("moments", [(1, 1, 2), (0, 0, 0), (1, 2, 3), (0.5, 0.5, 1 + 1e-12), (1e-20, 0, 1e-20)])
def test_valid_and_limiting_inertias_load_silently(moments):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model_from_urdf_string(urdf(upper_inertia=tensor(*moments)), strict=True)


def test_one_warning_lists_every_invalid_link():
    links = "".join(f'<link name="bad{k}"><inertial><mass value="1"/>{tensor(10, 1, 1)}</inertial></link>'
                    for k in range(8))
    joints = "".join(f'<joint name="j{k}" type="revolute"><parent link="base"/><child link="bad{k}"/></joint>'
                     for k in range(8))
    with pytest.warns(InertiaWarning) as caught:
        model_from_urdf_string(f'<robot name="r"><link name="base"/>{links}{joints}</robot>')
    assert len(caught) == 1
    message = str(caught[0].message)
    assert all(f"'bad{k}'" in message for k in range(6)) and "and 2 more" in message


@pytest.mark.parametrize("value", ["-1", "-1e-300", "nan", "-inf"])
def test_negative_or_nan_mass_stays_an_error(value):
    refused(urdf(fore_inertial=f'<inertial><mass value="{value}"/>{INERTIA}</inertial>'), "'fore'", "mass")


def test_inertial_origin_overflow_is_refused():
    inertial = f'<inertial><origin xyz="1e200 0 0"/><mass value="1"/>{INERTIA}</inertial>'
    refused(urdf(fore_inertial=inertial), "'fore'", "not finite")


def test_merged_masses_overflow_is_refused():
    heavy = f'<inertial><mass value="1e308"/>{INERTIA}</inertial>'
    text = (f'<robot name="r"><link name="base"/><link name="a">{heavy}</link><link name="b">{heavy}</link>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="a"/></joint>'
            '<joint name="weld" type="fixed"><parent link="a"/><child link="b"/></joint></robot>')
    message = refused(text, "'a'", "merged", "not finite")
    assert "mass inf" in message
    # welded to the fixed base instead, b moves nothing and is not merged: the model is finite
    model_from_urdf_string(text.replace('<parent link="a"/><child link="b"/>',
                                        '<parent link="base"/><child link="b"/>'))


def test_composed_placement_overflow_is_refused():
    text = ('<robot name="r"><link name="base"/><link name="a"/><link name="b"/>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="a"/></joint>'
            '<joint name="f1" type="fixed"><parent link="a"/><child link="b"/><origin xyz="1.7e308 0 0"/></joint>'
            '<link name="c"/><joint name="f2" type="fixed"><parent link="b"/><child link="c"/>'
            '<origin xyz="1.7e308 0 0"/></joint></robot>')
    refused(text, "'c'", "placement", "not finite")


def test_builder_refuses_non_finite_models():
    b = ModelBuilder("arm")
    heavy = Inertia(m=1e308)
    upper = b.add_body(-1, Revolute((0, 0, 1)), "shoulder", "upper", inertia=heavy)
    b.add_fixed_body(upper, "weight", inertia=heavy)
    with pytest.raises(ModelError, match="'upper'.*not finite"):
        b.finish()
    with pytest.raises(ModelError, match="'tool'"):
        ModelBuilder("arm").add_body(-1, Revolute((0, 0, 1)), "j", "tool",
                                     inertia=Inertia(1.0, (0, 0, 0), ((float("inf"), 0, 0), (0, 1, 0), (0, 0, 1))))
    far = ModelBuilder("arm")
    far.add_body(-1, Revolute((0, 0, 1)), "j", "tool", X_T=Transform(r=(1e308, 0, 0)))
    far.add_frame("far", "tool", Transform(r=(1e308, 0, 0)))
    far.add_frame("beyond", "far", Transform(r=(1e308, 0, 0)))  # placed on tool at 2e308
    with pytest.raises(ModelError, match="'beyond'.*placement"):
        far.finish()
    with pytest.raises(ModelError, match="gravity"):
        ModelBuilder("arm", gravity=(0, 0, float("nan"))).finish()


@pytest.mark.parametrize("data", [
    b'<?xml version="1.0" encoding="foo-bar"?><robot name="r"><link name="a"/></robot>',
    b'<?xml version="1.0" encoding="rot13"?><robot name="r"><link name="a"/></robot>',
    b'<?xml version="1.0" encoding="punycode"?><robot name="r"><link name="a"/></robot>',
    b'<?xml version="1.0" encoding="idna"?><robot name="r"><link name="a"/></robot>',
    b'<?xml version="1.0" encoding="undefined"?><robot name="r"><link name="a"/></robot>',
    '<?xml version="1.0" encoding="shift_jis"?><robot name="\u30ed"><link name="a"/></robot>'.encode("shift_jis"),
    b'<?xml version="1.0" encoding="UTF-32"?><robot name="r"><link name="a"/></robot>',
    '<?xml version="1.0" encoding="UTF-32"?><robot name="r"><link name="a"/></robot>'.encode("utf-32"),
    b'\xef\xbb\xbf<?xml version="1.0" encoding="UTF-16"?><robot name="r"><link name="a"/></robot>',
    b'<?xml version="1.0"?><robot name="\xff\xfe"><link name="a"/></robot>',
    '<robot name="\ud800"><link name="a"/></robot>',
], ids=["unknown", "rot13", "punycode", "idna", "undefined", "shift_jis", "utf-32-declared", "utf-32", "bom-utf16",
        "invalid-utf8", "surrogate"])
def test_undecodable_xml_is_one_urdf_error(data):
    message = refused(data, "'<string>'")
    assert "UTF-8" in message or "malformed XML" in message


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-8-sig", "latin-1"])
def test_decodable_encodings_load(codec):
    declared = {"utf-8-sig": "utf-8", "utf-16-le": "utf-16"}.get(codec, codec)
    text = f'<?xml version="1.0" encoding="{declared}"?>' + urdf(fore_name="f\u00f6re")
    model = model_from_urdf_string(text.encode(codec))
    assert "f\u00f6re" in model.body_names


@pytest.mark.parametrize("value", ["1_000", "1\u0660", "\u0661", "\uff11", "\u0967", "\u00b2", "\u00bd", "0x1",
                                   "\u0131nf", "1e", "e1", ".", "+-1", "1.0.0", "1,0", "\u22121", "1\u00a0"])
def test_numbers_are_plain_ascii_decimals(value):
    message = refused(urdf(fore_inertial=f'<inertial><mass value="{value}"/>{INERTIA}</inertial>'), "'fore'", "mass",
                      "ASCII")
    assert repr(value) in message


@pytest.mark.parametrize("value, expected", [("2", 2.0), ("+2.", 2.0), ("-0", 0.0), (".5", 0.5), ("5E-1", 0.5),
                                             ("  0.5  ", 0.5), ("1e-400", 0.0), ("0.000", 0.0)])
def test_plain_decimals_are_read(value, expected):
    model = model_from_urdf_string(urdf(fore_inertial=f'<inertial><mass value="{value}"/>{INERTIA}</inertial>'))
    assert model.inertia[1].m == expected


@pytest.mark.parametrize("values", ["0 0 inf", "nan 0 0", "0 0 -Infinity", "1e999 0 0"])
def test_non_finite_numbers_are_refused(values):
    refused(urdf(elbow_extra=f'<origin xyz="{values}"/>'), "'elbow'", "xyz", "finite")


@pytest.mark.parametrize("extra, owner, tag", [
    ('<parent link="upper"/>', "joint 'elbow'", "parent"),
    ('<child link="fore"/>', "joint 'elbow'", "child"),
    ('<origin xyz="0 0 1"/><origin xyz="0 0 2"/>', "joint 'elbow'", "origin"),
    ('<axis xyz="0 1 0"/><axis xyz="1 0 0"/>', "joint 'elbow'", "axis"),
])
def test_duplicate_joint_elements(extra, owner, tag):
    message = refused(urdf(elbow_extra=extra), owner, f"<{tag}>")
    assert message == f"{owner} has two <{tag}> elements; keep one"


@pytest.mark.parametrize("inertial, owner, tag", [
    (f'<inertial><mass value="1"/>{INERTIA}</inertial><inertial><mass value="2"/></inertial>', "link 'fore'",
     "inertial"),
    (f'<inertial><mass value="1"/><mass value="2"/>{INERTIA}</inertial>', "link 'fore' <inertial>", "mass"),
    (f'<inertial><mass value="1"/>{INERTIA}{INERTIA}</inertial>', "link 'fore' <inertial>", "inertia"),
    ('<inertial><origin/><origin xyz="0 0 1"/><mass value="1"/></inertial>', "link 'fore' <inertial>", "origin"),
])
def test_duplicate_inertial_elements(inertial, owner, tag):
    message = refused(urdf(fore_inertial=inertial), owner, f"<{tag}>")
    assert message == f"{owner} has two <{tag}> elements; keep one"


def test_three_duplicates_are_counted():
    assert "has 3 <origin> elements" in refused(urdf(elbow_extra="<origin/>" * 3))


WEIRD = ["a\nb", "a\r\nb", "tab\there", "\u2028", "\x85", "\x7f\u2029", "quote'\"", "x" * 5000]


@pytest.mark.parametrize("name", WEIRD, ids=[f"weird{k}" for k in range(len(WEIRD))])
def test_names_are_escaped_in_messages(name):
    def with_name(joint_name, child):
        root = ET.fromstring(urdf(elbow_extra='<axis xyz="0 0 0"/>'))
        elbow = root.findall("joint")[1]
        elbow.set("name", joint_name)
        elbow.find("child").set("link", child)
        return ET.tostring(root)  # ET escapes the name as XML character references

    message = refused(with_name("elbow", name), "'elbow'", "does not exist")
    assert len(message) < 1000
    message = refused(with_name(name, "fore"), "zero length")
    assert repr(name)[:50] in message


def test_missing_file_with_newline_in_its_path(tmp_path):
    path = tmp_path / "a\nb.urdf"
    with pytest.raises(URDFError) as info:
        rbdgen.load_urdf(path)
    assert one_line(str(info.value)) and "a\\nb.urdf" in str(info.value)
    path.write_text("<robot")
    with pytest.raises(URDFError) as info:
        rbdgen.load_urdf(path)
    assert one_line(str(info.value)) and "malformed XML" in str(info.value)


def test_huge_axis_is_normalized_and_tiny_axis_refused():
    model = model_from_urdf_string(urdf(elbow_extra='<axis xyz="1e300 0 1e300"/>'))
    assert model.joints[1].model.axis == pytest.approx((2 ** -0.5, 0, 2 ** -0.5))
    refused(urdf(elbow_extra='<axis xyz="1e-300 0 0"/>'), "'elbow'", "zero length")
