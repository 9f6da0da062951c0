"""Recording the graph to an MCAP rosbag2 bag and replaying it: the metadata is what
``ros2 bag info`` reads, and a lock-step run (with a damage event in the middle) replays to
bit-identical commands."""
import time

import numpy as np
import pytest
import yaml
from std_msgs.msg import String

from hybrid_dynamics.errors import InputError
from hybrid_dynamics.ros.bag import BagRecorder, replay_bag
from hybrid_dynamics.sim.bagfile import bag_info
from hybrid_dynamics.ros.graph import Graph
from hybrid_dynamics.ros.qos import STATE_QOS
from hybrid_dynamics.ros.sources import StandingSource

INPUTS = ("/joint_states", "/imu_sensor_broadcaster/imu")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("bags") / "run"
    g = Graph("jethexa", params={"whole_body_controller": {"trigger": "joint_states"},
                                 "morphology_manager": {"auto_detect": False}})
    try:
        ctrl = g.nodes["whole_body_controller"]
        rec = g.add_node(lambda ctx, r: BagRecorder(path, r, context=ctx, controller_params=ctrl.flat))
        src = g.add_node(lambda ctx, r: StandingSource(r, context=ctx, noise=0.003, seed=4))
        damage = src.create_publisher(String, "/morphology_manager/damage", STATE_QOS)
        g.start()
        assert g.spin_until(lambda: all(rec.matched.get(t, 0) >= 1 and ctrl.matched.get(t, 0) >= 1
                                        for t in INPUTS), timeout=20.0)
        time.sleep(0.1)

        def samples(n):
            for _ in range(n):
                c = ctrl.cycles
                src.publish_sample(imu=True, js=False)
                time.sleep(0.002)
                src.publish_sample(t=src.t, imu=False, js=True)
                assert g.spin_until(lambda: ctrl.cycles > c, timeout=2.0)
        samples(60)
        damage.publish(String(data="- remove_leg: leg2\n- lock_joint: {joint: leg1_coxa_joint, angle: 0.1}"))
        assert g.spin_until(lambda: ctrl.revision == 1 and rec.counts["/morphology_manager/morphology"] >= 2,
                            timeout=5.0)
        samples(60)
        time.sleep(0.2)
        counts = rec.close()
    finally:
        g.shutdown()
    return path, counts


def test_bag_is_mcap_rosbag2_with_metadata(recorded):
    path, counts = recorded
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["storage_identifier"] == "mcap" and meta["version"] == 9
    assert list(path.glob("*.mcap"))
    topics = {t["topic_metadata"]["name"]: t for t in meta["topics_with_message_count"]}
    assert topics["/joint_states"]["topic_metadata"]["type"] == "sensor_msgs/msg/JointState"
    assert topics["/effort_controller/commands"]["message_count"] == counts["/effort_controller/commands"] == 120
    info = bag_info(path)
    assert info["custom_data"]["hybrid_dynamics.robot"] == "jethexa"
    assert info["topics"]["/imu_sensor_broadcaster/imu"]["count"] == 120


def test_replay_gives_identical_commands(recorded):
    path, _ = recorded
    first = replay_bag(path)
    assert first.replayed.shape == (120, 18)
    assert first.identical, first.summary()
    leg2 = [i for i, n in enumerate(first.joints) if n.startswith("leg2_") or n == "leg1_coxa_joint"]
    assert np.all(first.replayed[-1, leg2] == 0) and np.any(first.replayed[30, leg2] != 0)
    again = replay_bag(path)
    assert np.array_equal(again.replayed, first.replayed)


def test_replay_cli_and_bad_bag(recorded, cli, tmp_path):
    path, _ = recorded
    out = cli("replay", path, "--strict", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    assert '"identical": true' in out.stdout
    bad = cli("replay", tmp_path)
    assert bad.returncode == 2 and "metadata.yaml" in bad.stderr
    with pytest.raises(InputError):
        BagRecorder.__init__(object.__new__(BagRecorder), path)       # never overwrites
