"""One file per algorithm, each written once for numbers and for symbols.

Every algorithm takes (model, ops, inputs...) where inputs are flat sequences of scalars and
`ops` supplies `let(name, index, value)` (the per-line hook: identity for numbers, a
recorder in the generator) and `sincos(angle)`. They return flat lists (vectors) or lists
of rows (matrices) of scalars.
"""
