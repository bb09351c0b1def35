/* cpu_ref recurrent layers: RNN, LSTM and GRU (ONNX opsets 7 and 14) in
 * every direction and both layouts, with sequence lengths, initial states,
 * peepholes, clip, input_forget, linear_before_reset and the activation
 * functions ONNX lists.  Generic over the floating dtypes, computed in
 * double (the weights converted once per run), one batch entry and
 * direction at a time. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>

/* One node's operands (absent optional ones NULL) and sizes. */
typedef struct rnn {
    const xf_node *n;
    const xf_rnn_attrs *a;
    const xf_tensor_view *x, *w, *r, *b, *lens, *h0, *c0, *p;
    const xf_tensor_view *y, *yh, *yc;
    const double *wd, *rd, *bd; /* W, R and B (NULL when absent) as doubles */
    int64_t seq, batch, in, hidden, dirs;
    int gates, funcs; /* LSTM: 4 gates (iofc), 3 functions (f, g, h); GRU: 3 (zrh), 2 (f, g); RNN: 1 (i), 1 (f) */
} rnn;

static const xf_tensor_view *given(const xf_tensor_view *v, int k, int n)
{
    return k < n && xf_rt_present(&v[k]) ? &v[k] : NULL;
}

static double ld(const xf_tensor_view *v, int64_t i) { return xf_rt_load_f64(v->dtype, v->data, i); }

/* Where X[t, b, :], Y[t, d, b, :] and a state [d, b, :] start, by layout. */
static int64_t x_at(const rnn *s, int64_t t, int64_t b)
{
    return (s->a->layout ? b * s->seq + t : t * s->batch + b) * s->in;
}
static int64_t y_at(const rnn *s, int64_t t, int64_t d, int64_t b)
{
    return (s->a->layout ? (b * s->seq + t) * s->dirs + d : (t * s->dirs + d) * s->batch + b) * s->hidden;
}
static int64_t state_at(const rnn *s, int64_t d, int64_t b)
{
    return (s->a->layout ? b * s->dirs + d : d * s->batch + b) * s->hidden;
}

static xf_status bind(rnn *s, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool lstm = n->op == XF_OP_LSTM, gru = n->op == XF_OP_GRU;
    const xf_rnn_attrs *a = &n->attrs.rnn;
    int ni = n->n_inputs, no = n->n_outputs;
    *s = (rnn){.n = n, .a = a, .x = &in[0], .w = &in[1], .r = &in[2], .b = given(in, 3, ni),
               .lens = given(in, 4, ni), .h0 = given(in, 5, ni), .c0 = lstm ? given(in, 6, ni) : NULL,
               .p = lstm ? given(in, 7, ni) : NULL, .y = given(out, 0, no), .yh = given(out, 1, no),
               .yc = lstm ? given(out, 2, no) : NULL, .dirs = a->direction == 2 ? 2 : 1,
               .gates = lstm ? 4 : gru ? 3 : 1, .funcs = lstm ? 3 : gru ? 2 : 1};
    if (s->x->shape.ndim != 3 || s->r->shape.ndim != 3 || (unsigned)a->layout > 1 || (unsigned)a->direction > 2 ||
        (a->n_acts && a->n_acts != s->funcs * s->dirs))
        return xf_rt_bad_node(err, n, "X and R need rank 3, and layout, direction and activations known values");
    s->seq = s->x->shape.dims[a->layout];
    s->batch = s->x->shape.dims[1 - a->layout];
    s->in = s->x->shape.dims[2];
    s->hidden = s->r->shape.dims[2];
    int64_t rows = s->gates * s->hidden, state = s->dirs * s->batch * s->hidden;
    const struct {
        const xf_tensor_view *v;
        const char *name;
        int64_t numel;
    } want[] = {{s->w, "W", s->dirs * rows * s->in},   {s->r, "R", s->dirs * rows * s->hidden},
                {s->b, "B", s->dirs * 2 * rows},       {s->lens, "sequence_lens", s->batch},
                {s->h0, "initial_h", state},           {s->c0, "initial_c", state},
                {s->p, "P", s->dirs * 3 * s->hidden},  {s->y, "Y", s->seq * state},
                {s->yh, "Y_h", state},                 {s->yc, "Y_c", state}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (want[i].v && xf_rt_numel(want[i].v) != want[i].numel)
            return xf_rt_bad_node(err, n, "%s has %lld elements, not %lld", want[i].name,
                                  (long long)xf_rt_numel(want[i].v), (long long)want[i].numel);
    for (int64_t b = 0; s->lens && b < s->batch; b++) {
        int64_t len = xf_rt_load_i64(s->lens->dtype, s->lens->data, b);
        if (len < 0 || len > s->seq)
            return xf_rt_bad_node(err, n, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                                  (long long)len, (long long)s->seq);
    }
    return XF_OK;
}

/* Function `which` (f, g or h) of direction d applied to v, gate inputs
 * clipped first when the node says so. */
static double activate(const rnn *s, int64_t d, int which, double v)
{
    /* LSTM's and GRU's f, g, h; RNN's f */
    static const unsigned char defaults[3] = {XF_RNN_SIGMOID, XF_RNN_TANH, XF_RNN_TANH};
    const xf_rnn_attrs *a = s->a;
    int i = (int)d * s->funcs + which;
    int f = a->n_acts ? a->acts[i] : s->n->op == XF_OP_RNN ? XF_RNN_TANH : defaults[which];
    double al = a->n_acts ? a->act_alpha[i] : 0, be = a->n_acts ? a->act_beta[i] : 0;
    switch (f) {
    case XF_RNN_RELU:
        return v > 0 ? v : 0;
    case XF_RNN_TANH:
        return tanh(v);
    case XF_RNN_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    case XF_RNN_AFFINE:
        return al * v + be;
    case XF_RNN_LEAKY_RELU:
        return v >= 0 ? v : al * v;
    case XF_RNN_THRESHOLDED_RELU:
        return v > al ? v : 0;
    case XF_RNN_SCALED_TANH:
        return al * tanh(be * v);
    case XF_RNN_HARD_SIGMOID:
        return fmax(0.0, fmin(1.0, al * v + be));
    case XF_RNN_ELU:
        return v >= 0 ? v : al * expm1(v);
    case XF_RNN_SOFTSIGN:
        return v / (1.0 + fabs(v));
    case XF_RNN_SOFTPLUS:
        return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
    default:
        return NAN;
    }
}

/* A gate's input: clamped to [-clip, clip] when clip is given (ONNX
 * Runtime clips every gate input, not h's input Ct). */
static double gate(const rnn *s, double v)
{
    return s->a->has_clip ? fmin(fmax(v, -(double)s->a->clip), (double)s->a->clip) : v;
}

/* Row `row` of direction d of weights m (rows of len values) times v. */
static double row_times(const double *m, int64_t d, int64_t rows, int64_t row, int64_t len, const double *v)
{
    const double *mr = m + (d * rows + row) * len;
    double sum = 0;
    for (int64_t j = 0; j < len; j++)
        sum += mr[j] * v[j];
    return sum;
}

static double bias(const rnn *s, int64_t d, int64_t at)
{
    return s->bd ? s->bd[d * 2 * s->gates * s->hidden + at] : 0;
}

/* Per gate row: gx = W xt + Wb, gh = R h + Rb. */
static void gate_inputs(const rnn *s, int64_t d, const double *xt, const double *h, double *gx, double *gh)
{
    int64_t rows = s->gates * s->hidden;
    for (int64_t row = 0; row < rows; row++) {
        gx[row] = row_times(s->wd, d, rows, row, s->in, xt) + bias(s, d, row);
        gh[row] = row_times(s->rd, d, rows, row, s->hidden, h) + bias(s, d, rows + row);
    }
}

/* it = f(Wi xt + Ri h + Pi . c + bi), ft likewise (or 1 - it with
 * input_forget), ct = g(Wc xt + Rc h + bc), c = ft . c + it . ct,
 * ot = f(Wo xt + Ro h + Po . c + bo), h = ot . h(c). */
static void lstm_step(const rnn *s, int64_t d, const double *gx, const double *gh, double *h, double *c)
{
    int64_t hs = s->hidden;
    for (int64_t j = 0; j < hs; j++) {
        int64_t gi = j, go = hs + j, gf = 2 * hs + j, gc = 3 * hs + j;
        double pi = s->p ? ld(s->p, d * 3 * hs + j) : 0, po = s->p ? ld(s->p, d * 3 * hs + hs + j) : 0;
        double pf = s->p ? ld(s->p, d * 3 * hs + 2 * hs + j) : 0;
        double i = activate(s, d, 0, gate(s, gx[gi] + gh[gi] + pi * c[j]));
        double f = s->a->input_forget ? 1 - i : activate(s, d, 0, gate(s, gx[gf] + gh[gf] + pf * c[j]));
        c[j] = f * c[j] + i * activate(s, d, 1, gate(s, gx[gc] + gh[gc]));
        double o = activate(s, d, 0, gate(s, gx[go] + gh[go] + po * c[j]));
        h[j] = o * activate(s, d, 2, c[j]);
    }
}

/* zt = f(Wz xt + Rz h + bz), rt likewise, ht = g(Wh xt + Rh (rt . h) + Rbh
 * + Wbh), or g(Wh xt + rt . (Rh h + Rbh) + Wbh) with linear_before_reset;
 * h = (1 - zt) . ht + zt . h.  rh (2 * hidden) is scratch. */
static void gru_step(const rnn *s, int64_t d, const double *gx, const double *gh, double *h, double *rh)
{
    int64_t hs = s->hidden, rows = 3 * hs;
    double *r = rh + hs;
    for (int64_t j = 0; j < hs; j++) {
        r[j] = activate(s, d, 0, gate(s, gx[hs + j] + gh[hs + j]));
        rh[j] = r[j] * h[j];
    }
    for (int64_t j = 0; j < hs; j++) {
        int64_t gz = j, gn = 2 * hs + j;
        double z = activate(s, d, 0, gate(s, gx[gz] + gh[gz]));
        double recur = s->a->linear_before_reset ? r[j] * gh[gn]
                                                 : row_times(s->rd, d, rows, gn, hs, rh) + bias(s, d, rows + gn);
        h[j] = (1 - z) * activate(s, d, 1, gate(s, gx[gn] + recur)) + z * h[j];
    }
}

/* h = f(Wi xt + Ri h + Wbi + Rbi). */
static void rnn_step(const rnn *s, int64_t d, const double *gx, const double *gh, double *h)
{
    for (int64_t j = 0; j < s->hidden; j++)
        h[j] = activate(s, d, 0, gate(s, gx[j] + gh[j]));
}

/* Each direction runs over each batch entry's own length (reverse: from
 * its last valid step back); Y is zero beyond that length, and the final
 * states are those of the last step run (zero for a length of 0, as in
 * ONNX Runtime). */
xf_status xf_ref_rnn(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    rnn s;
    xf_status st = bind(&s, n, in, out, err);
    if (st != XF_OK)
        return st;
    int64_t hs = s.hidden, rows = s.gates * hs, nw = s.dirs * rows * s.in, nr = s.dirs * rows * hs;
    int64_t nb = s.b ? s.dirs * 2 * rows : 0;
    /* the weights once as doubles, then per step x, the gate inputs and the states */
    double *wd = malloc(sizeof *wd * (size_t)(nw + nr + nb + s.in + 2 * rows + 4 * hs + 1));
    if (!wd)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    double *rd = wd + nw, *bd = rd + nr, *xt = bd + nb;
    for (int64_t i = 0; i < nw; i++)
        wd[i] = ld(s.w, i);
    for (int64_t i = 0; i < nr; i++)
        rd[i] = ld(s.r, i);
    for (int64_t i = 0; i < nb; i++)
        bd[i] = ld(s.b, i);
    s.wd = wd;
    s.rd = rd;
    s.bd = s.b ? bd : NULL;
    double *gx = xt + s.in, *gh = gx + rows, *h = gh + rows, *c = h + hs, *scratch = c + hs;
    for (int64_t d = 0; d < s.dirs; d++)
        for (int64_t b = 0; b < s.batch; b++) {
            int64_t len = s.lens ? xf_rt_load_i64(s.lens->dtype, s.lens->data, b) : s.seq;
            bool reverse = s.a->direction == 1 || d == 1;
            for (int64_t j = 0; j < hs; j++) {
                h[j] = s.h0 ? ld(s.h0, state_at(&s, d, b) + j) : 0;
                c[j] = s.c0 ? ld(s.c0, state_at(&s, d, b) + j) : 0;
            }
            for (int64_t step = 0; step < len; step++) {
                int64_t t = reverse ? len - 1 - step : step;
                for (int64_t i = 0; i < s.in; i++)
                    xt[i] = ld(s.x, x_at(&s, t, b) + i);
                gate_inputs(&s, d, xt, h, gx, gh);
                if (n->op == XF_OP_LSTM)
                    lstm_step(&s, d, gx, gh, h, c);
                else if (n->op == XF_OP_GRU)
                    gru_step(&s, d, gx, gh, h, scratch);
                else
                    rnn_step(&s, d, gx, gh, h);
                for (int64_t j = 0; s.y && j < hs; j++)
                    xf_rt_store_f64(s.y->dtype, s.y->data, y_at(&s, t, d, b) + j, h[j]);
            }
            for (int64_t t = len; s.y && t < s.seq; t++)
                for (int64_t j = 0; j < hs; j++)
                    xf_rt_store_f64(s.y->dtype, s.y->data, y_at(&s, t, d, b) + j, 0);
            for (int64_t j = 0; j < hs; j++) {
                if (s.yh)
                    xf_rt_store_f64(s.yh->dtype, s.yh->data, state_at(&s, d, b) + j, len ? h[j] : 0);
                if (s.yc)
                    xf_rt_store_f64(s.yc->dtype, s.yc->data, state_at(&s, d, b) + j, len ? c[j] : 0);
            }
        }
    free(wd);
    return XF_OK;
}
