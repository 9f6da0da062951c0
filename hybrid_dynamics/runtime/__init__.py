"""The control cycle wired once (pipeline.py: inputs -> estimate -> references -> whole-body QP
-> command) and what runs it: the controller node, ``replay``, the benches and the library
loop closed around a plant (plant_loop.py)."""
