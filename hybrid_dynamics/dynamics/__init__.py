"""Modular floating-base dynamics (papers 000 and 003) and closed-chain dynamics (paper 001).

- :mod:`.lie`: SE(3) helpers (hat, Ad, ad, exp) in Pinocchio's [linear; angular] order.
- :mod:`.tree`: a robot and a :class:`~hybrid_dynamics.model.morphology.Morphology` compiled
  into the arrays every engine reads (removed links dropped, locked joints merged).
- :mod:`.hamel`: paper 000's Boltzmann-Hamel engine, direct form and fast form.
- :mod:`.denoc`: paper 003's module-level DeNOC engine (recursive ID/FD, block UDU^T).
- :mod:`.reference`: damaged Pinocchio reference models built independently from the URDF.
"""
