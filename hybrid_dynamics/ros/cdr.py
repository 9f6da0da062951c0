"""Sensor messages read from their serialized bytes (issue 15, goal 4).

At 1 kHz the graph takes five sensor messages a millisecond (the joint states for the
estimator, the controller and the morphology manager, the IMU for the first two). rclpy's take
converts each into its Python message object: the class's constructor and one checked
property setter per field, nested messages included (``Header``, ``Time``, ``Quaternion``,
``Vector3``), on the executor's thread. Taken serialized instead (``raw=True``), the bytes
are read here into a plain object with the same attribute names, which the nodes' callbacks
and :mod:`hybrid_dynamics.runtime.inputs`'s parsers read as they read the message:

* ``JointState``: ``header.stamp.sec / nanosec``, ``header.frame_id``, ``name`` (a list of
  str), ``position``, ``velocity``, ``effort`` (float64 arrays over a copy of the bytes). A
  robot sends the same names every time: when the bytes of the name sequence are those of the
  previous message, its list is reused without reading the strings again.
* ``Imu``: ``header``, ``orientation`` (``x y z w``), ``angular_velocity``,
  ``linear_acceleration`` (``x y z``) and the three covariances (tuples of 9).

The layout is OMG CDR (XCDR1, what ROS 2's middlewares write for these types): a 4-byte
encapsulation header (``00 01``: little-endian, ``00 00``: big-endian), then the fields in
order, each aligned to its own size counted from after the header; a string is its length
(with the terminating NUL) and its bytes; a sequence its count and its elements. Bytes in any
other encapsulation are handed to rclpy's own deserialisation; bytes that do not hold a whole
message raise :class:`MalformedMessage` (a ``ValueError``).
"""
from __future__ import annotations

import struct

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import Imu, JointState


class MalformedMessage(ValueError):
    """Bytes that do not hold a whole message of the type."""


class Stamp:
    __slots__ = ("sec", "nanosec")

    def __init__(self, sec: int, nanosec: int):
        self.sec, self.nanosec = sec, nanosec


class Header:
    __slots__ = ("stamp", "frame_id")

    def __init__(self, stamp: Stamp, frame_id: str):
        self.stamp, self.frame_id = stamp, frame_id


class Vector:
    """``x y z`` (and ``w`` for a quaternion)."""
    __slots__ = ("x", "y", "z", "w")

    def __init__(self, x: float, y: float, z: float, w: float = 0.0):
        self.x, self.y, self.z, self.w = x, y, z, w


class JointStateData:
    """A ``sensor_msgs/JointState`` read from its bytes (module docstring)."""
    __slots__ = ("header", "name", "position", "velocity", "effort")


class ImuData:
    """A ``sensor_msgs/Imu`` read from its bytes (module docstring)."""
    __slots__ = ("header", "orientation", "orientation_covariance", "angular_velocity",
                 "angular_velocity_covariance", "linear_acceleration", "linear_acceleration_covariance")


_ORDER = {1: "<", 0: ">"}               # the encapsulation's second byte: little / big endian
_NATIVE = "<" if np.little_endian else ">"
_IMU_DOUBLES = 4 + 9 + 3 + 9 + 3 + 9


def _align(o: int, n: int) -> int:
    """``o`` (an offset in the whole buffer) aligned to ``n`` counted from after the 4-byte
    encapsulation header."""
    return o + (-(o - 4) % n)


def _header(data, e: str):
    """(Header, offset after it)."""
    sec, nanosec, n = struct.unpack_from(e + "iII", data, 4)
    o = 16 + n
    if n < 1 or o > len(data):
        raise MalformedMessage("frame_id runs past the message")
    return Header(Stamp(sec, nanosec), bytes(data[16:o - 1]).decode()), o


class JointStateReader:
    """Reads ``JointState`` bytes (module docstring); one per subscription (it remembers the
    last name sequence)."""

    def __init__(self):
        self._names_bytes = b""
        self._names: list = []

    def __call__(self, data: bytes):
        if len(data) < 4 or data[0] != 0 or data[1] not in _ORDER:
            return deserialize_message(bytes(data), JointState)
        e = _ORDER[data[1]]
        try:
            return self._read(data, e)
        except (struct.error, UnicodeDecodeError, ValueError) as exc:
            raise MalformedMessage(f"joint state: {exc}") from None

    def _read(self, data, e: str) -> JointStateData:
        m = JointStateData()
        m.header, o = _header(data, e)
        o = _align(o, 4)
        known = self._names_bytes
        if known and data[o:o + len(known)] == known:
            m.name = self._names
            o += len(known)
        else:
            start = o
            (count,) = struct.unpack_from(e + "I", data, o)
            o += 4
            names = []
            for _ in range(count):
                o = _align(o, 4)
                (n,) = struct.unpack_from(e + "I", data, o)
                if n < 1 or o + 4 + n > len(data):
                    raise MalformedMessage("a joint name runs past the message")
                names.append(bytes(data[o + 4:o + 3 + n]).decode())
                o += 4 + n
            self._names_bytes, self._names = bytes(data[start:o]), names
            m.name = names
        buf = bytearray(data)                  # the arrays' own (writable) memory
        arrays = []
        for _ in range(3):                     # position, velocity, effort
            o = _align(o, 4)
            (count,) = struct.unpack_from(e + "I", data, o)
            o = _align(o + 4, 8) if count else o + 4
            if o + 8 * count > len(data):
                raise MalformedMessage("a joint-state array runs past the message")
            a = np.frombuffer(buf, e + "f8", count, o)
            arrays.append(a if e == _NATIVE else a.astype(np.float64))
            o += 8 * count
        m.position, m.velocity, m.effort = arrays
        return m


class ImuReader:
    """Reads ``Imu`` bytes (module docstring)."""

    def __call__(self, data: bytes):
        if len(data) < 4 or data[0] != 0 or data[1] not in _ORDER:
            return deserialize_message(bytes(data), Imu)
        e = _ORDER[data[1]]
        try:
            m = ImuData()
            m.header, o = _header(data, e)
            v = struct.unpack_from(e + "%dd" % _IMU_DOUBLES, data, _align(o, 8))
        except (struct.error, UnicodeDecodeError, ValueError) as exc:
            raise MalformedMessage(f"IMU: {exc}") from None
        m.orientation = Vector(v[0], v[1], v[2], v[3])
        m.orientation_covariance = v[4:13]
        m.angular_velocity = Vector(v[13], v[14], v[15])
        m.angular_velocity_covariance = v[16:25]
        m.linear_acceleration = Vector(v[25], v[26], v[27])
        m.linear_acceleration_covariance = v[28:37]
        return m


READERS = {JointState: JointStateReader, Imu: ImuReader}
