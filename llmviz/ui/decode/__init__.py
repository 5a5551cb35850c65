"""The Decode family (C4-C6): the stepper's controls, Play and the sliders (decode_controls.py), and the seed
box, New sample and Resample from a step (seed_controls.py)."""
