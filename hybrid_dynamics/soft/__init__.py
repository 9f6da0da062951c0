"""Soft-rigid modules and the model-agnostic recursive inverse dynamics of [Pustina 2024].

Layer: beside ``dynamics`` (imports model, dynamics, errors, paths; control and above may
import it). A module is a joint (0-6 DoF, or a free flyer) followed by a body given only by its
geometric map ``p = f(x, q_B)``; :class:`~hybrid_dynamics.soft.tree.SoftTree` runs IID, ID,
MID over chains and trees. See docs/soft.md.
"""
