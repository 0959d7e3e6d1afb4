// common.wgsl — helpers prepended to every kernel (after the C-generated
// prefix of `const` parameters): erf/erfc in fp32 and the exact GELU.
//
// erf: |x| < 0.5: Maclaurin series to x^15 (truncation < 1e-10);
//      |x| >= 0.5: erfc(z) = t*exp(-z^2 + P(t)), t = 1/(1+z/2), the Chebyshev
//      fit of Numerical Recipes (fractional error < 1.2e-7), so the absolute
//      error of erf stays ~1e-7 everywhere. Phi(x) for x < 0 uses erfc
//      directly (no 1 - (1 - erfc) cancellation).

fn tt_erfc_pos(z: f32) -> f32 {  // z >= 0.5
    let t = 1.0 / (1.0 + 0.5 * z);
    let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    return t * exp(p - z * z);
}

fn tt_erf_small(z: f32) -> f32 {  // |z| < 0.5
    let t = z * z;
    return z * 1.1283791670955126 * (1.0 + t * (-0.33333333333 + t * (0.1 + t * (-0.023809523810 +
           t * (0.0046296296296 + t * (-0.00075757575758 + t * (0.00010683760684 + t * (-0.000013227513228))))))));
}

fn tt_erf(x: f32) -> f32 {
    let z = abs(x);
    if (z < 0.5) { return tt_erf_small(x); }
    let r = 1.0 - tt_erfc_pos(z);
    return select(r, -r, x < 0.0);
}

// standard normal CDF
fn tt_phi_cdf(x: f32) -> f32 {
    let z = x * 0.70710678118654752;
    if (z <= -0.5) { return 0.5 * tt_erfc_pos(-z); }
    return 0.5 * (1.0 + tt_erf(z));
}

fn tt_gelu(x: f32) -> f32 { return x * tt_phi_cdf(x); }

fn tt_gelu_grad(x: f32) -> f32 {
    return tt_phi_cdf(x) + x * 0.39894228040143268 * exp(-0.5 * x * x);
}
