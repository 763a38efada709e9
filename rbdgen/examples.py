"""Real robots from the `example-robot-data` package (pip install example-robot-data).

    python -m rbdgen.examples panda        # prints the path of panda.urdf
"""

import os
import sys
import sysconfig

# name -> (URDF path inside example-robot-data's robots/ folder, floating base)
ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "double_pendulum_continuous": ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "romeo": ("romeo_description/urdf/romeo.urdf", True),
}


def robots_dir():
    """example-robot-data installs its URDFs under the cmeel prefix of site-packages;
    RBDGEN_ROBOTS_DIR names another folder of the same layout (a machine without the package)."""
    if os.environ.get("RBDGEN_ROBOTS_DIR"):
        return os.environ["RBDGEN_ROBOTS_DIR"]
    for key in ("purelib", "platlib"):
        path = os.path.join(sysconfig.get_paths()[key], "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(path):
            return path
    raise FileNotFoundError("example-robot-data is not installed: pip install example-robot-data")


def robot_path(name):
    if name not in ROBOTS:
        raise KeyError(f"unknown example robot {name!r}; choose from {', '.join(ROBOTS)}")
    return os.path.join(robots_dir(), ROBOTS[name][0])


if __name__ == "__main__":
    try:
        print(robot_path(sys.argv[1] if len(sys.argv) > 1 else "panda"))
    except (KeyError, FileNotFoundError) as exc:
        print(f"rbdgen.examples: {exc.args[0]}", file=sys.stderr)
        sys.exit(2)
