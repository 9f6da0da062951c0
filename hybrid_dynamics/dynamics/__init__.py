"""Modular floating-base dynamics ([Farghdani 2025], [Shah 2012]) and closed-chain dynamics ([Mingo Hoffman 2024]).

- :mod:`.lie`: SE(3) helpers (hat, Ad, ad, exp) in Pinocchio's [linear; angular] order.
- :mod:`.tree`: a robot and a :class:`~hybrid_dynamics.model.morphology.Morphology` compiled
  into the arrays every engine reads (removed links dropped, locked joints merged).
- :mod:`.hamel`: Farghdani et al.'s (2025) Boltzmann-Hamel engine, direct form and fast form.
- :mod:`.denoc`: Shah et al.'s (2012) module-level DeNOC engine (recursive ID/FD, block UDU^T).
- :mod:`.reference`: damaged Pinocchio reference models built independently from the URDF.
"""
