"""The lost-object search mission on the globe: the domain model, the planners and the metrics.

Modules, from the ground up:

* ``geography`` — the Earth as :math:`S^2` with radius 6371 km: lat/lon, great circles, rotations.
* ``ocean`` — the land/sea mask (from ``global-land-mask``, sampled once and cached).
* ``prior`` — the prior mixture (LKP blob, route corridor, reverse-drift sighting), masked to the ocean.
* ``sensor`` — detection probability against distance, false alarms, verification, reliability.
* ``drift`` — solid-body rotation about a tilted axis (exact, invertible) plus diffusion.
* ``assets`` — the search asset: speed, dwell, endurance.
* ``belief`` — the exact Bayesian belief on particles: p ∝ p(1 − POD), drift, cumulative POS.
* ``detection_gp`` — the GP of the detection field with the prior belief as its mean and scale.
* ``planners`` — one interface; the manibo GP planner and the baselines.
* ``mission`` — the simulator; ``scenarios`` — AF447-style and random missions; ``metrics``.
"""
