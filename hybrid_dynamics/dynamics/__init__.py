"""Modular floating-base dynamics ([Farghdani 2025], [Shah 2012]) and closed-chain dynamics ([Mingo Hoffman 2024]).

- :mod:`.lie`: the package's one Lie-group module, SE(3) and SE(2) (hat/vee, Ad, ad, exp/log,
  group integrators) in Pinocchio's [linear; angular] order.
- :mod:`.floating_hamel`, :mod:`.com_frame`, :mod:`.decoupling`: [Feurstein 2021]'s Hamel
  equations on SE(3)/SE(2) x R^n, the locked CoM frame and the decoupling transforms.
- :mod:`.tree`: a robot and a :class:`~hybrid_dynamics.model.morphology.Morphology` compiled
  into the arrays every engine reads (removed links dropped, locked joints merged).
- :mod:`.hamel`: Farghdani et al.'s (2025) Boltzmann-Hamel engine, direct form and fast form.
- :mod:`.denoc`: Shah et al.'s (2012) module-level DeNOC engine (recursive ID/FD, block UDU^T).
- :mod:`.reference`: damaged Pinocchio reference models built independently from the URDF.
"""
