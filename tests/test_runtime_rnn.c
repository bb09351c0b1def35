/* cpu_ref's LSTM and GRU against hand-computed values.  Hidden and input
 * sizes of 1 keep the arithmetic short: with the default activations the
 * expected values are written as the formulas of ONNX's equations, and
 * with Affine/Relu activations they are exact fractions, derived in the
 * comments. */
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <string.h>

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* An LSTM or GRU case: hidden size 1, the inputs given (NULL: omitted). */
static node_case rnn_case(xf_op op, int direction, int n_in, xf_tensor *const *in)
{
    node_case c = make_case(op, 0);
    c.n_in = n_in;
    for (int i = 0; i < n_in; i++)
        c.in[i] = in[i];
    c.n_out = op == XF_OP_LSTM ? 3 : 2;
    c.a.rnn.hidden_size = 1;
    c.a.rnn.direction = direction;
    return c;
}

/* Activation function k of the node: ONNX's code, alpha and beta. */
static void set_act(xf_attrs *a, int k, xf_rnn_act f, float alpha, float beta)
{
    a->rnn.acts[k] = (unsigned char)f;
    a->rnn.act_alpha[k] = alpha;
    a->rnn.act_beta[k] = beta;
    if (a->rnn.n_acts <= k)
        a->rnn.n_acts = k + 1;
}

/* Functions whose results are exact fractions, for each direction:
 * f(v) = alpha v + beta (Affine), g = Relu and, for LSTM, h = identity. */
static void affine_relu(node_case *c, float alpha, float beta)
{
    int funcs = c->op == XF_OP_LSTM ? 3 : 2;
    for (int d = 0; d < (c->a.rnn.direction == 2 ? 2 : 1); d++) {
        set_act(&c->a, funcs * d, XF_RNN_AFFINE, alpha, beta);
        set_act(&c->a, funcs * d + 1, XF_RNN_RELU, 0, 0);
        if (funcs == 3)
            set_act(&c->a, funcs * d + 2, XF_RNN_AFFINE, 1, 0);
    }
}

/* Runs c and checks Y (shape y) and the final states (shape state, each):
 * want holds Y's values, then Y_h's, then (LSTM) Y_c's. */
static void expect_rnn(node_case c, xf_shape y, xf_shape state, const double *want)
{
    xf_tensor *outs[3];
    run_case(&c, outs);
    expect(outs[0], XF_DT_FLOAT, y.ndim, y.dims, want);
    want += xf_shape_numel(&y);
    for (int k = 1; k < c.n_out; k++, want += xf_shape_numel(&state))
        expect(outs[k], XF_DT_FLOAT, state.ndim, state.dims, want);
}

/* Default activations (Sigmoid, Tanh, Tanh), W = 1 and R = 0.5 for every
 * gate, X = (0.5, -1): each gate sees a = x + 0.5 h. */
START_TEST(lstm_default_activations)
{
    double i1 = sig(0.5), c1 = i1 * tanh(0.5), h1 = i1 * tanh(c1);
    double a2 = -1 + 0.5 * h1, s2 = sig(a2), c2 = s2 * c1 + s2 * tanh(a2), h2 = s2 * tanh(c2);
    for (int omit_y = 0; omit_y < 2; omit_y++) {
        node_case c = rnn_case(XF_OP_LSTM, 0, 3,
                               (xf_tensor *[]){F32(DIMS(2, 1, 1), 0.5, -1), F32(DIMS(1, 4, 1), 1, 1, 1, 1),
                                               F32(DIMS(1, 4, 1), 0.5, 0.5, 0.5, 0.5)});
        c.omit_out = omit_y;
        xf_tensor *outs[3];
        run_case(&c, outs);
        if (!omit_y)
            EXPECT(outs[0], XF_DT_FLOAT, DIMS(2, 1, 1, 1), h1, h2);
        EXPECT(outs[1 - omit_y], XF_DT_FLOAT, DIMS(1, 1, 1), h2);
        EXPECT(outs[2 - omit_y], XF_DT_FLOAT, DIMS(1, 1, 1), c2);
    }
}
END_TEST

/* Reverse, two batch entries of lengths 2 and 1, initial cell state
 * (1, 0), peepholes (i 1, o 1, f 0.5), W = 1, R = 0; functions
 * f(v) = 0.5 v + 0.5 (Affine), g = Relu, h = identity (Affine 1, 0):
 *   entry 0, t = 1 (x 2, c 1): i = f(2 + 1) = 2, f = f(2 + 0.5) = 1.75,
 *     c = 1.75 + 2 * 2 = 5.75, o = f(2 + 5.75) = 4.375, h = 25.15625
 *   entry 0, t = 0 (x 1): i = f(6.75) = 3.875, f = f(1 + 2.875) = 2.4375,
 *     c = 2.4375 * 5.75 + 3.875 = 17.890625, o = f(18.890625) = 9.9453125,
 *     h = 177.9278564453125
 *   entry 1, t = 0 (x 3, c 0): i = 2, c = 2 * 3 = 6, o = f(9) = 5, h = 30;
 *     its t = 1 lies beyond its length: Y is 0 there. */
START_TEST(lstm_reverse_lengths_peepholes_activations)
{
    node_case c = rnn_case(XF_OP_LSTM, 1, 8,
                           (xf_tensor *[]){F32(DIMS(2, 2, 1), 1, 3, 2, 7), F32(DIMS(1, 4, 1), 1, 1, 1, 1),
                                           F32(DIMS(1, 4, 1), 0, 0, 0, 0), NULL, I32(DIMS(2), 2, 1), NULL,
                                           F32(DIMS(1, 2, 1), 1, 0), F32(DIMS(1, 3), 1, 1, 0.5)});
    affine_relu(&c, 0.5f, 0.5f);
    expect_rnn(c, xf_shape_make(DIMS(2, 1, 2, 1)), xf_shape_make(DIMS(1, 2, 1)),
               (double[]){177.9278564453125, 30, 25.15625, 0, /* Y_h */ 177.9278564453125, 30, /* Y_c */ 17.890625, 6});
}
END_TEST

/* Both directions, batch first (layout 1), input_forget, clip 2, W = 1,
 * R = 1, Wb of the input gate -1, initial h (0.5, -1); f(v) = 0.5 v + 0.5,
 * g = Relu, h = identity.  Gate inputs: i from clip(x + h - 1), the others
 * from clip(x + h); the forget gate is 1 - i.
 *   forward, x 1 (h 0.5, c 0): i = 0.75, c = 0.75 * 1.5 = 1.125,
 *     o = 1.25, h = 1.40625
 *   forward, x 2: i = f(clip(2.40625)) = 1.5, c = -0.5 * 1.125 + 1.5 * 2 =
 *     2.4375, o = 1.5, h = 3.65625
 *   reverse, x 2 (h -1, c 0): i = 0.5, c = 0.5 * 1 = 0.5, o = 1, h = 0.5
 *   reverse, x 1: i = 0.75, c = 0.25 * 0.5 + 0.75 * 1.5 = 1.25, o = 1.25,
 *     h = 1.5625 */
START_TEST(lstm_bidirectional_batch_first_clip_input_forget)
{
    node_case c = rnn_case(XF_OP_LSTM, 2, 6,
                           (xf_tensor *[]){F32(DIMS(1, 2, 1), 1, 2), F32(DIMS(2, 4, 1), 1, 1, 1, 1, 1, 1, 1, 1),
                                           F32(DIMS(2, 4, 1), 1, 1, 1, 1, 1, 1, 1, 1),
                                           F32(DIMS(2, 8), -1, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0), NULL,
                                           F32(DIMS(1, 2, 1), 0.5, -1)});
    c.a.rnn.layout = 1;
    c.a.rnn.input_forget = 1;
    c.a.rnn.has_clip = true;
    c.a.rnn.clip = 2;
    affine_relu(&c, 0.5f, 0.5f);
    expect_rnn(c, xf_shape_make(DIMS(1, 2, 2, 1)), xf_shape_make(DIMS(1, 2, 1)),
               (double[]){1.40625, 1.5625, 3.65625, 0.5, /* Y_h */ 3.65625, 1.5625, /* Y_c */ 2.4375, 1.25});
}
END_TEST

/* Default activations (Sigmoid, Tanh), W = 1, R = 0.5, Rbh = 0.25, initial
 * h 0.8, x 0.3: z = r = sig(0.3 + 0.4), and the new gate sees
 * 0.3 + 0.5 r 0.8 + 0.25, or 0.3 + r (0.5 * 0.8 + 0.25) with
 * linear_before_reset; h = (1 - z) n + z 0.8. */
START_TEST(gru_default_activations_linear_before_reset)
{
    double z = sig(0.7);
    double want[2] = {(1 - z) * tanh(0.55 + 0.4 * z) + z * 0.8, (1 - z) * tanh(0.3 + 0.65 * z) + z * 0.8};
    for (int lbr = 0; lbr < 2; lbr++) {
        node_case c = rnn_case(XF_OP_GRU, 0, 6,
                               (xf_tensor *[]){F32(DIMS(1, 1, 1), 0.3), F32(DIMS(1, 3, 1), 1, 1, 1),
                                               F32(DIMS(1, 3, 1), 0.5, 0.5, 0.5), F32(DIMS(1, 6), 0, 0, 0, 0, 0, 0.25),
                                               NULL, F32(DIMS(1, 1, 1), 0.8)});
        c.a.rnn.linear_before_reset = lbr;
        expect_rnn(c, xf_shape_make(DIMS(1, 1, 1, 1)), xf_shape_make(DIMS(1, 1, 1)), (double[]){want[lbr], want[lbr]});
    }
}
END_TEST

/* Both directions, lengths 2 and 1, linear_before_reset, W = 1, R = 1,
 * Rbh = 1; f = Affine(0, 0.5), so z = r = 0.5, g = Relu: each step is
 * h = 0.5 relu(x + 0.5 (h + 1)) + 0.5 h.
 *   entry 0, x (1, 2): forward 0.75, then 0.5 * 2.875 + 0.375 = 1.8125;
 *     reverse (from x 2) 1.25, then 0.5 * 2.125 + 0.625 = 1.6875
 *   entry 1, x (3, beyond its length): 1.75 either way, Y 0 at t = 1 */
START_TEST(gru_bidirectional_lengths)
{
    node_case c = rnn_case(XF_OP_GRU, 2, 5,
                           (xf_tensor *[]){F32(DIMS(2, 2, 1), 1, 3, 2, 9), F32(DIMS(2, 3, 1), 1, 1, 1, 1, 1, 1),
                                           F32(DIMS(2, 3, 1), 1, 1, 1, 1, 1, 1),
                                           F32(DIMS(2, 6), 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1), I32(DIMS(2), 2, 1)});
    c.a.rnn.linear_before_reset = 1;
    affine_relu(&c, 0, 0.5f);
    expect_rnn(c, xf_shape_make(DIMS(2, 2, 2, 1)), xf_shape_make(DIMS(2, 2, 1)),
               (double[]){0.75, 1.75, 1.6875, 1.75, 1.8125, 0, 1.25, 0, /* Y_h */ 1.8125, 1.75, 1.6875, 1.75});
}
END_TEST

/* Session creation (or its run) fails with msg, naming the node. */
static void expect_failure(node_case *c, bool at_run, const char *msg)
{
    xf_graph *g = case_graph(c);
    xf_session *s = NULL;
    xf_tensor *outs[3] = {NULL};
    xf_error err = {0};
    xf_status st = xf_session_create(g, 17, "cpu_ref", NULL, &s, &err);
    if (at_run) {
        ck_assert_msg(st == XF_OK, "%s", err.msg);
        st = xf_session_run(s, NULL, outs, &err);
    }
    ck_assert_int_eq(st, XF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "node 'n0'") && strstr(err.msg, msg), "%s", err.msg);
    xf_session_free(s);
    xf_graph_free(g);
    for (int i = 0; i < c->n_in; i++)
        xf_tensor_release(c->in[i]);
}

START_TEST(rnn_errors)
{
    node_case c = rnn_case(XF_OP_LSTM, 0, 3,
                           (xf_tensor *[]){F32(DIMS(2, 1, 1), 1, 2), F32(DIMS(1, 3, 1), 1, 1, 1),
                                           F32(DIMS(1, 4, 1), 1, 1, 1, 1)});
    expect_failure(&c, false, "W has shape 1x3x1; X 2x1x1 with hidden size 1 and 1 direction(s) asks for 1x4x1");
    c = rnn_case(XF_OP_GRU, 2, 3,
                 (xf_tensor *[]){F32(DIMS(1, 1, 1), 1), F32(DIMS(2, 3, 1), 1, 1, 1, 1, 1, 1),
                                 F32(DIMS(2, 3, 1), 1, 1, 1, 1, 1, 1)});
    for (int k = 0; k < 3; k++)
        set_act(&c.a, k, XF_RNN_TANH, 0, 0);
    expect_failure(&c, false, "has 3 activation functions; GRU takes 2 per direction, 2 direction(s) here");
    c = rnn_case(XF_OP_GRU, 0, 5,
                 (xf_tensor *[]){F32(DIMS(2, 1, 1), 1, 2), F32(DIMS(1, 3, 1), 1, 1, 1), F32(DIMS(1, 3, 1), 1, 1, 1),
                                 NULL, I32(DIMS(1), 3)});
    expect_failure(&c, true, "sequence_lens[0] = 3 is outside [0, 2]");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_rnn");
    TCase *k = tcase_create("recurrent");
    tcase_add_test(k, lstm_default_activations);
    tcase_add_test(k, lstm_reverse_lengths_peepholes_activations);
    tcase_add_test(k, lstm_bidirectional_batch_first_clip_input_forget);
    tcase_add_test(k, gru_default_activations_linear_before_reset);
    tcase_add_test(k, gru_bidirectional_lengths);
    tcase_add_test(k, rnn_errors);
    suite_add_tcase(s, k);
    return xf_test_run_suite(s);
}
