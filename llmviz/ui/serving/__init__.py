"""The Serving family (C13-C16): a request trace through the schedulers (serving_run.py), the look inside one
step (serving_step.py), and the tables, stepper and downloads (serving_view.py)."""
