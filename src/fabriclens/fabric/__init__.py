"""Fabric design and a flow-level simulator (pure: numpy only, no I/O).

``topology`` sizes a leaf/spine/core fabric from a catalog switch; ``placement``, ``flows``,
``routing`` and ``maxmin`` turn a collective on that fabric into flows, paths and max-min fair
rates; ``simulate`` puts them together and compares with the alpha-beta model.
"""
