"""Demonstrations run by ``manibo demo``: short, seeded, offline, and each writes figures."""
