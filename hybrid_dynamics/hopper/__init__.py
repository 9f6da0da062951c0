"""[Feurstein 2021]'s planar one-legged hoppers on SE(2) x R^1: description and model
(:mod:`.model`), impedance controllers I-III with the energy pump (:mod:`.controller`), the
hybrid simulation with floor, phases, events and work per port (:mod:`.simulate`), and the
thesis's experiments (:mod:`.experiments`). Ranked with ``control``: it imports ``dynamics`` and
``model`` only.
"""
