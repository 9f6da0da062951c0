"""The node executables (setup.py's console scripts, what ``ros2 run`` and ``ros2 launch``
start): each puts the stop handlers in place (ros/stop_signal.py) before it imports its node's
module, by name, because that import is the slowest part of a node's start-up (numba kernels
from their cache, MuJoCo, Pinocchio: seconds, tens of seconds on a loaded machine or with a
cold cache) and a signal arriving then must stop the process too. Before, Python's own handler
was in place during those imports: a SIGINT there exited -2 with a traceback, or was dropped
inside a callback and the node never stopped (stop_signal.py)."""
from __future__ import annotations

import importlib
from functools import partial

from .stop_signal import PROCESS_STOP

# executable -> the module whose ``main()`` runs the node
NODES = {
    "state_estimator": "hybrid_dynamics.ros.state_estimator",
    "whole_body_controller": "hybrid_dynamics.ros.whole_body_controller",
    "morphology_manager": "hybrid_dynamics.ros.morphology_manager",
    "mujoco_sim": "hybrid_dynamics.ros.sim_node",
}


def run(executable: str) -> int:
    """The node of ``executable`` (a key of :data:`NODES`) until SIGINT or SIGTERM: its exit
    code; 0 when a signal ended it, before it spun too."""
    stop = PROCESS_STOP
    try:
        stop.install()
        module = importlib.import_module(NODES[executable])
    except BaseException:
        if stop.requested:                 # whatever the interrupt became inside the import
            return 0
        raise
    return module.main()


# the console scripts
state_estimator = partial(run, "state_estimator")
whole_body_controller = partial(run, "whole_body_controller")
morphology_manager = partial(run, "morphology_manager")
mujoco_sim = partial(run, "mujoco_sim")
