"""The function table: every fact about every function a generated module may have (its
inputs, outputs, algorithm and variants, derivatives, Pinocchio counterpart), read by the
generator (rbdgen.codegen), the reference and verification (rbdgen.runtime) alike, and
serialized into each module's model.json for its binding."""
