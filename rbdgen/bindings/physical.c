/* Whether model parameters are physical, state by state: rbdgen/model/physical.py's tests in C
   (the same formulas and tolerance), for the parameters a call gives. Fixed code, the same for
   every robot, included by the module's rbdgen_<robot>_calls.c after its tables param_bodies
   (the ten entries of each link and payload) and param_nonnegative (armature, damping). The
   Python function says what fails, with physical.py, for the first state found here: in NumPy
   the tests cost more than the call they guard (Panda, aba, 0.5 us a state against 0.2). */

#define RBDGEN_PHYSICAL_TOLERANCE 1e-9   /* physical.py's TOLERANCE */

/* The symmetric [[a, d, e], [d, b, f], [e, f, c]] positive semidefinite within tol * size:
   every principal minor >= 0 (physical.py's _semidefinite). */
static int semidefinite(double a, double b, double c, double d, double e, double f, double size)
{
    const double tol = RBDGEN_PHYSICAL_TOLERANCE * size;
    const double det = a * (b * c - f * f) - d * (d * c - f * e) + e * (d * f - b * e);
    return fmin(fmin(a, b), c) >= -tol
        && fmin(fmin(a * b - d * d, a * c - e * e), b * c - f * f) >= -tol * size
        && det >= -tol * size * size;
}

/* One body's ten parameters (m, m c, I about the frame's origin: xx xy yy xz yz zz) physical
   (physical.py's _body_problem); strict: with the triangle inequality. */
static int physical_body(const double *p, int strict)
{
    double scale = 1e-300;
    for (int k = 0; k < 10; ++k)
        scale = fmax(scale, fabs(p[k]));
    const double m = p[0], hx = p[1], hy = p[2], hz = p[3];
    if (m < 0)
        return 0;
    const int massless = m <= RBDGEN_PHYSICAL_TOLERANCE * scale;
    if (massless && fmax(fmax(fabs(hx), fabs(hy)), fabs(hz)) > RBDGEN_PHYSICAL_TOLERANCE * scale)
        return 0;
    const double w = massless ? 0.0 : 1.0 / m;
    const double a = p[4] - (hy * hy + hz * hz) * w, b = p[6] - (hx * hx + hz * hz) * w,
                 c = p[9] - (hx * hx + hy * hy) * w, d = p[5] + hx * hy * w, e = p[7] + hx * hz * w,
                 f = p[8] + hy * hz * w;
    const double size = fmax(scale, (hx * hx + hy * hy + hz * hz) * w), half = (a + b + c) / 2;
    return semidefinite(a, b, c, d, e, f, size)
        && (!strict || semidefinite(half - a, half - b, half - c, -d, -e, -f, size));
}

/* The first of n states (params one set after the other, `size` each) whose parameters are not
   finite or not physical, from state `first` on; -1 when none. */
static long params_problem(const double *params, long n, long first, long size, int strict)
{
    for (long s = first; s < n; ++s) {
        const double *p = params + s * size;
        int good = 1;
        for (long k = 0; k < size; ++k)
            good = good && isfinite(p[k]);
        for (long k = 0; good && k < RBDGEN_PARAM_NONNEGATIVE; ++k)
            good = p[param_nonnegative[k]] >= 0;
        for (long b = 0; good && b < RBDGEN_PARAM_BODIES; ++b) {
            double body[10];
            for (int k = 0; k < 10; ++k)
                body[k] = p[param_bodies[b][k]];
            good = physical_body(body, strict);
        }
        if (!good)
            return s;
    }
    return -1;
}
