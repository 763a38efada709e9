/* Whether model parameters are physical, state by state: rbdgen/model/physical.py's tests in C
   (the same formulas and tolerance), for the parameters a call gives. Fixed code, the same for
   every robot, included by the module's rbdgen_<robot>_calls.c after its tables param_bodies
   (the ten entries of each link and payload) and param_nonnegative (armature, damping). The
   Python function says what fails, with physical.py, for the first state found here: in NumPy
   the tests cost more than the call they guard (docs/performance.md, Model parameters at run
   time). Compiled with the module's optimization flags (calls.c). */

#define RBDGEN_PHYSICAL_TOLERANCE 1e-9   /* physical.py's TOLERANCE */
#define RBDGEN_PHYSICAL_LARGEST 1e100    /* physical.py's LARGEST */

/* Branch-free, so that the states of a group are tested side by side (vectors of states where
   the compiler finds them): min and max as comparisons (fmin and fmax are calls or longer code
   for their NaN rule). calls.c is compiled unfused (package.py's ENTRY_POINT_FLAGS): a
   multiply-add fused in the vector loop and not in the one-state loop rounds differently, and a
   state at the tolerance would pass in a group and fail alone, or pass here and fail physical.py. */
static inline double physical_min(double a, double b) { return a < b ? a : b; }
static inline double physical_max(double a, double b) { return a > b ? a : b; }
static inline double physical_abs(double a) { return a < 0 ? -a : a; }

/* The symmetric [[a, d, e], [d, b, f], [e, f, c]] positive semidefinite within tol * size:
   every principal minor >= 0 (physical.py's _semidefinite). */
static inline int semidefinite(double a, double b, double c, double d, double e, double f, double size)
{
    const double tol = RBDGEN_PHYSICAL_TOLERANCE * size;
    const double det = a * (b * c - f * f) - d * (d * c - f * e) + e * (d * f - b * e);
    return (int)(physical_min(physical_min(a, b), c) >= -tol)
         & (int)(physical_min(physical_min(a * b - d * d, a * c - e * e), b * c - f * f) >= -tol * size)
         & (int)(det >= -tol * size * size);
}

/* One body's ten parameters (m, m c, I about the frame's origin: xx xy yy xz yz zz) physical
   (physical.py's _body_problem); strict: with the triangle inequality. */
static inline int physical_body(const double *p, int strict)
{
    double scale = 1e-300, mass_scale = 1e-300;   /* (m c left out of the second: see physical.py) */
    for (int k = 0; k < 10; ++k) {
        scale = physical_max(scale, physical_abs(p[k]));
        if (k == 0 || k >= 4)
            mass_scale = physical_max(mass_scale, physical_abs(p[k]));
    }
    const double m = p[0], hx = p[1], hy = p[2], hz = p[3];
    const int massless = m <= RBDGEN_PHYSICAL_TOLERANCE * mass_scale;
    const double h = physical_max(physical_max(physical_abs(hx), physical_abs(hy)), physical_abs(hz));
    const double w = massless ? 0.0 : 1.0 / m;
    const double a = p[4] - (hy * hy + hz * hz) * w, b = p[6] - (hx * hx + hz * hz) * w,
                 c = p[9] - (hx * hx + hy * hy) * w, d = p[5] + hx * hy * w, e = p[7] + hx * hz * w,
                 f = p[8] + hy * hz * w;
    const double size = physical_max(scale, (hx * hx + hy * hy + hz * hz) * w), half = (a + b + c) / 2;
    const double all = a + b + c + d + e + f + size;   /* inf or NaN: finite values too large to test */
    return (int)(m >= 0) & (int)!(massless & (int)(h > RBDGEN_PHYSICAL_TOLERANCE * scale))
         & (int)(all - all == 0) & (int)(size <= RBDGEN_PHYSICAL_LARGEST)
         & semidefinite(a, b, c, d, e, f, size)
         & ((int)!strict | semidefinite(half - a, half - b, half - c, -d, -e, -f, size));
}

/* A state's parameters finite (no exponent of all ones: inf or NaN) and the entries that must
   not be negative not negative. */
static inline int admissible(const double *p, long size)
{
    unsigned long long infinite = 0;
    for (long k = 0; k < size; ++k) {
        unsigned long long bits;
        memcpy(&bits, p + k, sizeof bits);
        infinite |= (bits & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;
    }
    int good = !infinite;
    for (long k = 0; k < RBDGEN_PARAM_NONNEGATIVE; ++k)
        good &= p[param_nonnegative[k]] >= 0;
    return good;
}

/* States tested together, each body's formulas on independent lanes: several times faster
   than one by one with branches, under clang and gcc (docs/performance.md, Model parameters at
   run time). Whether the compiler makes vectors of it is fragile: with the last few states
   tested in a loop of their own, clang made no vectors of the groups either. */
#define RBDGEN_PHYSICAL_GROUP 8

/* The first of `count` (at most a group) states from state s whose parameters are not finite or
   not physical; -1 when none. Each body's ten entries are laid out lane by lane first, so that
   the compiler reads them as vectors of states. */
static inline long group_problem(const double *params, long s, int count, long size, int strict)
{
    int good[RBDGEN_PHYSICAL_GROUP];
    for (int l = 0; l < count; ++l)
        good[l] = admissible(params + (s + l) * size, size);
    for (long b = 0; b < RBDGEN_PARAM_BODIES; ++b) {
        double body[10][RBDGEN_PHYSICAL_GROUP];
        for (int k = 0; k < 10; ++k)
            for (int l = 0; l < count; ++l)
                body[k][l] = params[(s + l) * size + param_bodies[b][k]];
        for (int l = 0; l < count; ++l) {
            double one[10];
            for (int k = 0; k < 10; ++k)
                one[k] = body[k][l];
            good[l] &= physical_body(one, strict);
        }
    }
    for (int l = 0; l < count; ++l)
        if (!good[l])
            return s + l;
    return -1;
}

/* The first of n states (params one set after the other, `size` each) whose parameters are not
   finite or not physical, from state `first` on; -1 when none. Whole groups with the group's
   size a constant (vectors), the last few as a shorter group: the same operations, unfused, so
   the same verdicts. */
static long params_problem(const double *params, long n, long first, long size, int strict)
{
    for (long s = first; s < n; s += RBDGEN_PHYSICAL_GROUP) {
        const long bad = n - s >= RBDGEN_PHYSICAL_GROUP
                             ? group_problem(params, s, RBDGEN_PHYSICAL_GROUP, size, strict)
                             : group_problem(params, s, (int)(n - s), size, strict);
        if (bad >= 0)
            return bad;
    }
    return -1;
}
