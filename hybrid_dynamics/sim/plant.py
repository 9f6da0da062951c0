"""The MuJoCo plant: the reference physics that our dynamics code never touches.

:class:`Plant` loads a robot's MJCF, steps it, exposes only what real sensors give and applies
damage as the real robot would suffer it.

Sensors (what a driver would publish)
  - joint encoders of the *actuated* joints (passive joints of closed linkages are hidden),
    position and rate, with optional Gaussian noise; the effort field is the commanded torque
    after clipping (a dead motor's command is still echoed);
  - the IMU at the robot's IMU site: orientation (x y z w), body angular rate and specific
    force, each with configurable white noise and a constant bias;
  - ground truth (base pose and twist), which no estimator may read: it goes on its own topic.

Commands are joint torques by joint name; each is clipped to the actuator's ``ctrlrange``.

Damage (the choices, stated)
  - removing a leg or its links ``first..n``: every body of the removed subtree gets zero mass
    and inertia, its geoms lose their contacts, its motors deliver nothing (the servo is gone)
    and its joints are frozen by an equality constraint at the angle they had (a little
    armature keeps MuJoCo's mass matrix positive definite; with zero mass the frozen stump
    exerts no force on the robot). The encoders of removed joints keep reporting that frozen
    angle: the damage has to be found from the dynamics, not from a missing message;
  - locking a joint: a joint equality constraint holds it at the given angle (default: where it
    is); its motor keeps receiving commands but cannot move it.
Every joint gets a (disabled) joint-equality constraint when the model is loaded, through
MuJoCo's model-editing API, so damage is a change of values at run time, not a recompile.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import mujoco
import numpy as np
import pinocchio as pin

from ..errors import InputError, reject_unknown_settings
from .soft_feet import Equivalent, add_equivalent_modules

REMOVED_ARMATURE = 1e-4       # kg m^2 on the frozen joints of removed links


@dataclass
class ImuNoise:
    """White noise (standard deviations) and constant biases of the simulated IMU."""
    gyro_std: float = 0.0            # rad/s
    accel_std: float = 0.0           # m/s^2
    orientation_std: float = 0.0     # rad (small rotation about a random axis)
    gyro_bias: Sequence[float] = (0.0, 0.0, 0.0)
    accel_bias: Sequence[float] = (0.0, 0.0, 0.0)
    joint_position_std: float = 0.0  # rad, on the encoders
    joint_velocity_std: float = 0.0  # rad/s

    @classmethod
    def from_dict(cls, data: Optional[dict]) -> "ImuNoise":
        data = dict(data or {})
        reject_unknown_settings(cls, data, "sensor noise", "noise")
        return cls(**data)


@dataclass
class ImuReading:
    orientation: np.ndarray          # quaternion x y z w, world <- imu
    angular_velocity: np.ndarray     # rad/s in the IMU frame
    linear_acceleration: np.ndarray  # specific force in the IMU frame (m/s^2)


@dataclass
class BodyTouch:
    """The first instant a geom of the robot other than a foot touched the floor."""
    t: float                         # plant time (s)
    vz: float                        # base's vertical velocity (world, m/s) at that step, before the contact acts
    point_speed: float = 0.0         # largest downward speed (m/s) of the robot's points touching the floor then


@dataclass
class GroundTruth:
    position: np.ndarray             # base origin in the world
    orientation: np.ndarray          # x y z w
    linear_velocity: np.ndarray      # world frame
    angular_velocity: np.ndarray     # base frame


class Plant:
    """A robot in MuJoCo, stepped at the MJCF's timestep (1 ms for the built-in robots)."""

    def __init__(self, robot, *, noise: Optional[ImuNoise] = None, seed: int = 0):
        if robot.mjcf is None:
            raise InputError(f"robot '{robot.name}' has no MJCF (add 'mjcf:' to its robot.yaml)")
        self.robot = robot
        self.noise = noise or ImuNoise()
        self.rng = np.random.default_rng(seed)
        spec = mujoco.MjSpec.from_file(str(robot.mjcf))
        # soft modules: their equivalent compliant model (sim/soft_feet.py), reported as the
        # model's coordinates <module>_q<k>, frozen with the link that carries them when it is lost
        self.soft = add_equivalent_modules(spec, robot) if robot.soft_modules else Equivalent()
        self.soft_names = self.soft.names
        hinge_names = [j.name for j in spec.joints if j.type in (mujoco.mjtJoint.mjJNT_HINGE,
                                                                 mujoco.mjtJoint.mjJNT_SLIDE)]
        for name in hinge_names:
            eq = spec.add_equality()
            eq.type = mujoco.mjtEq.mjEQ_JOINT
            eq.name = f"lock_{name}"
            eq.name1 = name
            eq.active = False
            eq.solref = [2 * spec.option.timestep, 1.0]      # as stiff as the step allows
            eq.solimp = [0.99, 0.999, 0.001, 0.5, 2.0]
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._free_qadr = next(m.jnt_qposadr[j] for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)
        self._free_vadr = next(m.jnt_dofadr[j] for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)
        self._free_body = next(m.jnt_bodyid[j] for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE)
        # every 1-DoF joint of the Pinocchio model, found by name in MuJoCo
        self.joint_names: List[str] = list(robot.joint_names)
        ids = []
        for name in self.joint_names:
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                raise InputError(f"joint '{name}' of the URDF is not in the MJCF {robot.mjcf}")
            ids.append(jid)
        self._jid = dict(zip(self.joint_names, ids))
        self._qadr = np.array([m.jnt_qposadr[j] for j in ids])
        self._vadr = np.array([m.jnt_dofadr[j] for j in ids])
        soft_ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.soft.joints]
        self._soft_qadr = np.array([m.jnt_qposadr[j] for j in soft_ids], int)
        self._soft_vadr = np.array([m.jnt_dofadr[j] for j in soft_ids], int)
        self._eq = {name: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, f"lock_{name}")
                    for name in hinge_names}
        # actuators: one motor per actuated joint, matched by the joint it drives
        self.actuated_joints: List[str] = list(robot.actuated_joints)
        by_joint = {m.actuator_trnid[a, 0]: a for a in range(m.nu)}
        self._act = np.array([by_joint[self._jid[n]] for n in self.actuated_joints])
        self.effort_limit = np.array([m.actuator_ctrlrange[a, 1] if m.actuator_ctrllimited[a] else np.inf
                                      for a in self._act])
        self._act_enabled = np.ones(len(self._act), dtype=bool)
        self._sensor = {name: (m.sensor_adr[i], m.sensor_dim[i]) for i in range(m.nsensor)
                        for name in [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SENSOR, i)]}
        self._floor = {g for g in range(m.ngeom) if m.geom_bodyid[g] == 0}
        # every geom of the robot that is not a foot: its touching the floor is the body (or a
        # leg's link) on the ground, which the outcome of a run is decided on
        feet = self._foot_geoms()
        self._body_geom = np.array([m.geom_bodyid[g] != 0 and g not in feet
                                    and bool(m.geom_contype[g] or m.geom_conaffinity[g]) for g in range(m.ngeom)])
        self.body_can_touch = bool(self._body_geom.any())
        self._floor_geom = np.array([g in self._floor for g in range(m.ngeom)])
        self.body_touch: Optional[BodyTouch] = None
        self._before = mujoco.MjData(m)          # the state before a step, to measure a first touch at
        self._healthy_mass = self.model.body_mass.copy()
        self.removed_joints: set = set()
        self.locked_joints: Dict[str, float] = {}
        self._tau = np.zeros(len(self._act))
        self.reset()

    # ------------------------------------------------------------------ state
    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    def reset(self, q: Optional[np.ndarray] = None, *, height_margin: float = 0.0005) -> None:
        """Put the robot at a Pinocchio configuration ``q`` (default: standing, feet on the floor)."""
        mujoco.mj_resetData(self.model, self.data)
        self.body_touch = None
        q = self.robot.q_stand.copy() if q is None else np.asarray(q, float).copy()
        if q is self.robot.q_stand or np.allclose(q[:3], 0.0):
            q[2] = self.standing_height(q) + height_margin
        self.set_state(q, np.zeros(self.robot.nv))

    def standing_height(self, q: np.ndarray) -> float:
        """Base height at which the lowest contact geom just touches the floor (z = 0)."""
        model = self.robot.model
        data = model.createData()
        q0 = np.array(q, float)
        q0[:3] = 0.0
        pin.framesForwardKinematics(model, data, q0)
        lowest = min(data.oMf[model.getFrameId(c.frame)].translation[2] for c in self.robot.contacts)
        radius = 0.0
        for g in range(self.model.ngeom):
            if self.model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE and self.model.geom_bodyid[g] != 0:
                radius = max(radius, float(self.model.geom_size[g, 0]))
        return -lowest + radius

    def set_state(self, q: np.ndarray, v: np.ndarray) -> None:
        """Set MuJoCo's state from Pinocchio's q = [p, quat xyzw, joints], v = [v local, w local, qd]."""
        d = self.data
        a, b = self._free_qadr, self._free_vadr
        d.qpos[a:a + 3] = q[:3]
        x, y, z, w = q[3:7]
        d.qpos[a + 3:a + 7] = (w, x, y, z)
        R = pin.Quaternion(w, x, y, z).toRotationMatrix()
        d.qvel[b:b + 3] = R @ v[:3]          # MuJoCo: world linear, local angular
        d.qvel[b + 3:b + 6] = v[3:6]
        d.qpos[self._qadr] = q[7:]
        d.qvel[self._vadr] = v[6:]
        mujoco.mj_forward(self.model, d)

    def q(self) -> np.ndarray:
        """True configuration in Pinocchio's convention (healthy size)."""
        d, a = self.data, self._free_qadr
        w, x, y, z = d.qpos[a + 3:a + 7]
        return np.concatenate([d.qpos[a:a + 3], [x, y, z, w], d.qpos[self._qadr]])

    def v(self) -> np.ndarray:
        """True velocity in Pinocchio's convention: base linear and angular in the base frame."""
        d, b = self.data, self._free_vadr
        R = self.data.xmat[self._free_body].reshape(3, 3)
        return np.concatenate([R.T @ d.qvel[b:b + 3], d.qvel[b + 3:b + 6], d.qvel[self._vadr]])

    # ------------------------------------------------------------------ commands and stepping
    def set_torques(self, tau) -> None:
        """Joint torques, a dict joint -> N m (joints not named: zero) or an array in
        :attr:`actuated_joints` order.

        Unknown joint names raise ``InputError``; each value is clipped to the actuator's limit;
        the motors of removed links deliver nothing."""
        if isinstance(tau, dict):
            values = np.zeros(len(self._act))        # a joint not named gets no torque
            index = {n: i for i, n in enumerate(self.actuated_joints)}
            for name, value in tau.items():
                if name not in index:
                    raise InputError(f"'{name}' is not an actuated joint", field="joints")
                values[index[name]] = value
        else:
            values = np.asarray(tau, float)
            if values.shape != (len(self._act),):
                raise InputError(f"expected {len(self._act)} torques, got {values.shape}")
        values = np.where(np.isfinite(values), values, 0.0)
        self._tau = np.clip(values, -self.effort_limit, self.effort_limit)
        self.data.ctrl[self._act] = np.where(self._act_enabled, self._tau, 0.0)

    def step(self, n: int = 1) -> None:
        """``n`` timesteps; the first one after which a body geom touches the floor is kept
        (:attr:`body_touch`), with the base's vertical speed before the contact acts and that
        of the touching points (:meth:`_touch_point_speed`)."""
        if self.body_touch is not None:
            mujoco.mj_step(self.model, self.data, nstep=n)
            return
        for k in range(n):
            # mj_step finds the contacts at the state it starts from, then integrates with
            # their forces: the speed before a first contact acts is the one before the step
            t, vz = self.time, float(self.data.qvel[self._free_vadr + 2])
            self._before.qpos[:] = self.data.qpos
            self._before.qvel[:] = self.data.qvel
            mujoco.mj_step(self.model, self.data)
            if self.body_on_floor():
                self.body_touch = BodyTouch(t, vz, self._touch_point_speed())
                if k + 1 < n:
                    mujoco.mj_step(self.model, self.data, nstep=n - k - 1)
                return

    def _touch_point_speed(self) -> float:
        """The largest downward speed of the robot's points that touch the floor (MuJoCo's
        contact positions on the bodies of non-foot geoms), at the state before the step that
        found the contact. A body turning onto its edge hits the floor with that edge: the
        base's own vertical speed can be small while the edge comes down at over 1 m/s
        (control/locomotion/planar_landing.py: a roll onto the unsupported edge at the tilt bound)."""
        m, d, before = self.model, self.data, self._before
        mujoco.mj_kinematics(m, before)
        mujoco.mj_comPos(m, before)
        jacp = np.zeros((3, m.nv))
        speed = 0.0
        for i in range(d.ncon):
            a, b = d.contact.geom[i]
            if d.contact.dist[i] > 0.0:
                continue
            g = a if self._body_geom[a] and self._floor_geom[b] else b if self._body_geom[b] and self._floor_geom[a] else -1
            if g < 0:
                continue
            mujoco.mj_jac(m, before, jacp, None, d.contact.pos[i], m.geom_bodyid[g])
            speed = max(speed, -float(jacp[2] @ before.qvel))
        return speed

    def body_on_floor(self) -> bool:
        """Does any geom of the robot other than a foot touch the floor now?"""
        d = self.data
        if d.ncon == 0:
            return False
        pairs = d.contact.geom[:d.ncon]
        touching = d.contact.dist[:d.ncon] <= 0.0
        return bool(np.any(touching & ((self._body_geom[pairs[:, 0]] & self._floor_geom[pairs[:, 1]])
                                       | (self._body_geom[pairs[:, 1]] & self._floor_geom[pairs[:, 0]]))))

    def _foot_geoms(self) -> set:
        """Geoms of the contacts: named as a contact frame, or on the body that carries it
        (the first frame up Pinocchio's frame tree that is a body of the MJCF)."""
        m, model = self.model, self.robot.model
        feet = set()
        for c in self.robot.contacts:
            g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, c.frame)
            if g >= 0:
                feet.add(g)
                continue
            f = model.getFrameId(c.frame)
            while f > 0 and mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, model.frames[f].name) < 0:
                f = model.frames[f].parentFrame
            body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, model.frames[f].name)
            feet.update(g for g in range(m.ngeom) if body > 0 and m.geom_bodyid[g] == body)
        return feet

    def settle(self, q_ref: np.ndarray, seconds: float = 0.3, kp: float = 50.0, kd: float = 0.3) -> None:
        """PD of the actuated joints to their coordinates in ``q_ref`` (Pinocchio q) for
        ``seconds``, so that every foot is down when the controller starts (the scenario
        runners do this before control). Passive joints of closed linkages have no motor:
        they follow. The gains are per joint coordinate (N m/rad, or N/m on a linear actuator).
        The plant's clock then restarts at 0: t = 0 is when control starts, the origin of a
        scenario's times and of the gait's phase (control/locomotion/gait.py), whichever
        graph runs the plant."""
        ia = [self.joint_names.index(n) for n in self.actuated_joints]
        q_a = np.asarray(q_ref, float)[7:][ia]
        for _ in range(int(seconds / self.timestep)):       # as the runner always did (299 steps for 0.3 s)
            q, v = self.q(), self.v()
            self.set_torques(kp * (q_a - q[7:][ia]) - kd * v[6:][ia])
            self.step()
        self.data.time = 0.0

    def joint_ground_truth(self):
        """(names, positions, velocities) of every 1-DoF joint, passive ones included
        (ground truth: for plots and checks, never for an estimator)."""
        return list(self.joint_names), self.data.qpos[self._qadr].copy(), self.data.qvel[self._vadr].copy()

    def contact_force_array(self, frames) -> np.ndarray:
        """World contact forces of ``frames`` (zeros when not touching), stacked (3 per frame)."""
        forces = self.contact_forces()
        return np.concatenate([np.asarray(forces.get(f, np.zeros(3)), float) for f in frames])

    # ------------------------------------------------------------------ sensors
    def joint_states(self):
        """(names, positions, velocities, efforts) of the actuated joints, as encoders give them,
        then the soft feet's coordinates (effort 0), as deformation sensors would.

        The effort is the torque the driver was commanded (clipped to the limit), as most
        effort interfaces echo it: a dead motor's command is still reported."""
        nz = self.noise
        idx = [self.joint_names.index(n) for n in self.actuated_joints]
        pos = self.data.qpos[self._qadr[idx]].copy()
        vel = self.data.qvel[self._vadr[idx]].copy()
        if nz.joint_position_std:
            pos += self.rng.normal(0.0, nz.joint_position_std, pos.shape)
        if nz.joint_velocity_std:
            vel += self.rng.normal(0.0, nz.joint_velocity_std, vel.shape)
        if self.soft_names:
            q_soft, v_soft = self.soft_state()
            return (list(self.actuated_joints) + self.soft_names, np.concatenate([pos, q_soft]),
                    np.concatenate([vel, v_soft]), np.concatenate([self._tau, np.zeros(len(self.soft_names))]))
        return list(self.actuated_joints), pos, vel, self._tau.copy()

    def soft_state(self):
        """(positions, velocities) of the soft modules' coordinates (ground truth): their
        equivalent model's joints mapped to the model's coordinates (sim/soft_feet.py)."""
        P = self.soft.to_coordinates
        return P @ self.data.qpos[self._soft_qadr], P @ self.data.qvel[self._soft_vadr]

    def _read(self, name: str) -> np.ndarray:
        adr, dim = self._sensor[name]
        return self.data.sensordata[adr:adr + dim].copy()

    def imu(self) -> ImuReading:
        nz = self.noise
        w, x, y, z = self._read("imu_quat")
        quat = np.array([x, y, z, w])
        gyro = self._read("imu_gyro") + np.asarray(nz.gyro_bias, float)
        acc = self._read("imu_acc") + np.asarray(nz.accel_bias, float)
        if nz.gyro_std:
            gyro += self.rng.normal(0.0, nz.gyro_std, 3)
        if nz.accel_std:
            acc += self.rng.normal(0.0, nz.accel_std, 3)
        if nz.orientation_std:
            delta = pin.exp3(self.rng.normal(0.0, nz.orientation_std, 3))
            rot = pin.Quaternion(quat[3], *quat[:3]).toRotationMatrix() @ delta
            quat = pin.Quaternion(rot).coeffs()          # x y z w
        return ImuReading(quat, gyro, acc)

    def ground_truth(self) -> GroundTruth:
        q, v = self.q(), self.v()
        R = pin.Quaternion(q[6], *q[3:6]).toRotationMatrix()
        return GroundTruth(q[:3].copy(), q[3:7].copy(), R @ v[:3], v[3:6].copy())

    def contact_forces(self) -> Dict[str, np.ndarray]:
        """World-frame force of the floor on each body in contact (name -> 3-vector)."""
        m, d = self.model, self.data
        out: Dict[str, np.ndarray] = {}
        wrench = np.zeros(6)
        for i in range(d.ncon):
            con = d.contact[i]
            g1, g2 = con.geom1, con.geom2
            if g1 not in self._floor and g2 not in self._floor:
                continue
            mujoco.mj_contactForce(m, d, i, wrench)
            frame = con.frame.reshape(3, 3)            # rows: normal, tangents (world)
            f = frame.T @ wrench[:3]                    # force on geom2 from geom1
            other = g2 if g1 in self._floor else g1
            if other == g1:
                f = -f
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, other) or \
                mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.geom_bodyid[other])
            out[name] = out.get(name, 0.0) + f
        return out

    def total_normal_force(self) -> float:
        return float(sum(f[2] for f in self.contact_forces().values()))

    def total_mass(self) -> float:
        return float(self.model.body_mass.sum())

    # ------------------------------------------------------------------ damage
    def _leg(self, leg: str):
        for candidate in self.robot.legs:
            if candidate.name == leg:
                return candidate
        raise InputError(f"unknown leg '{leg}' (legs: {', '.join(l.name for l in self.robot.legs)})", field="leg")

    def remove_leg(self, leg: str) -> None:
        self.remove_links(leg, 1)

    def remove_links(self, leg: str, first: int) -> None:
        """Links ``first``..n of ``leg`` (1-based from the body) stop acting on the robot."""
        spec = self._leg(leg)
        if not 1 <= first <= len(spec.joints):
            raise InputError(f"link index {first} is out of range 1..{len(spec.joints)} for {leg}", field="link")
        m = self.model
        first_joint = self.robot.model.names[spec.joints[first - 1]]
        root = m.jnt_bodyid[self._jid[first_joint]]
        bodies = [b for b in range(m.nbody) if self._descends(b, root)]
        for b in bodies:
            m.body_mass[b] = 0.0
            m.body_inertia[b] = 0.0
            for g in range(m.ngeom):
                if m.geom_bodyid[g] == b:
                    m.geom_contype[g] = 0
                    m.geom_conaffinity[g] = 0
            for j in range(m.njnt):
                if m.jnt_bodyid[j] == b and m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
                    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
                    m.dof_armature[m.jnt_dofadr[j]] = max(m.dof_armature[m.jnt_dofadr[j]], REMOVED_ARMATURE)
                    self._freeze(name, float(self.data.qpos[m.jnt_qposadr[j]]))
                    self.removed_joints.add(name)
                    if name in self.actuated_joints:
                        self._act_enabled[self.actuated_joints.index(name)] = False
        self._refresh()

    def lock_joint(self, joint: str, angle: Optional[float] = None) -> float:
        """Freeze ``joint`` at ``angle`` (default: its current angle); returns the angle."""
        if joint not in self._eq:
            raise InputError(f"unknown joint '{joint}'", field="joint")
        if angle is None:
            angle = float(self.data.qpos[self.model.jnt_qposadr[self._jid[joint]]])
        self._freeze(joint, angle)
        self.locked_joints[joint] = angle
        self.data.qvel[self.model.jnt_dofadr[self._jid[joint]]] = 0.0
        return angle

    def apply_morphology(self, morphology) -> None:
        """Bring the plant to a :class:`~hybrid_dynamics.model.morphology.Morphology` (damage only)."""
        sizes = morphology.sizes
        for leg, kept in morphology.links_kept:
            if kept < sizes[leg]:
                self.remove_links(leg, kept + 1)
        for joint, angle in morphology.locked:
            self.lock_joint(joint, angle)

    def _freeze(self, joint: str, angle: float) -> None:
        e = self._eq[joint]
        self.model.eq_data[e, :] = 0.0
        self.model.eq_data[e, 0] = angle
        self.data.eq_active[e] = 1

    def _descends(self, body: int, root: int) -> bool:
        while body > 0:
            if body == root:
                return True
            body = self.model.body_parentid[body]
        return False

    def _refresh(self) -> None:
        """Recompute MuJoCo's derived constants (subtree masses, invweights) keeping the state."""
        qpos, qvel, act, t = self.data.qpos.copy(), self.data.qvel.copy(), self.data.act.copy(), self.data.time
        warm = self.data.qacc_warmstart.copy()
        mujoco.mj_setConst(self.model, self.data)
        self.data.qpos[:], self.data.qvel[:], self.data.act[:] = qpos, qvel, act
        self.data.time = t
        self.data.qacc_warmstart[:] = warm
        mujoco.mj_forward(self.model, self.data)
