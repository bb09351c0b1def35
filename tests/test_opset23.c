/* ONNX's opset 23 ops for transformers -- Attention (and opset 24's
 * nonpad_kv_seqlen), RMSNormalization, RotaryEmbedding -- on cpu_ref
 * against values of ONNX's reference implementation (onnx 1.23), the cpu
 * backend against cpu_ref, their shape rules' errors, and the import and
 * export of their attributes with the forms that stay opaque. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define ATT XF_OP_ATTENTION
#define RMS XF_OP_RMS_NORM
#define ROT XF_OP_ROTARY_EMB

static node_case at23(xf_op op, int n_in, xf_tensor *a, xf_tensor *b, xf_tensor *c, xf_tensor *d)
{
    node_case k = make_case(op, n_in, a, b, c, d);
    k.opset = 23;
    return k;
}

/* Attention (Q, K, V, attn_mask, past_key, past_value) with n_out outputs,
 * the middle ones (present_key, present_value) omitted unless presents. */
static node_case attention(xf_tensor *q, xf_tensor *k, xf_tensor *v, xf_tensor *mask, xf_tensor *pk, xf_tensor *pv,
                           int n_out, bool presents)
{
    node_case c = make_case(ATT, pk ? 6 : mask ? 4 : 3, q, k, v, mask, pk, pv);
    c.opset = 23;
    c.n_out = n_out;
    c.omit_out = presents ? 0 : 6;
    return c;
}

/* ------------------------------------------------------------ RMSNormalization */

/* Over the last axis; over the last two (axis 1) with epsilon 1e-3; over
 * the last two with a scale of the last one's size, repeated. */
START_TEST(rms_norm_axes)
{
    EXPECT(run1(at23(RMS, 2, F32(DIMS(2, 3), -0.7, 0, 0.2, -0.9, -0.7, 0.9), F32(DIMS(3), -0.9, -0.7, 0.9), NULL,
                     NULL)),
           XF_DT_FLOAT, DIMS(2, 3), 1.498825, 0, 0.4282357, 0.9658313, 0.5842684, 0.9658313);
    node_case c = at23(RMS, 2, F32(DIMS(2, 2, 3), 0.2, -0.3, 0, 0.3, -0.4, -0.7, 0.6, 0.3, 0, 0.6, 0.1, 1),
                       F32(DIMS(2, 3), -0.6, 0.1, 0, -0.3, 0.2, -0.5), NULL, NULL);
    c.a.axis = 1;
    c.a.epsilon = 1e-3f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 3), -0.3140544, -0.0785136, 0, -0.2355408, -0.2093696, 0.9159919,
           -0.652571, 0.05438091, 0, -0.3262855, 0.03625394, -0.9063485);
    c = at23(RMS, 2, F32(DIMS(2, 2, 3), 0.6, 0.7, -0.7, -0.1, -0.4, -0.8, 0.8, -0.1, -0.7, 0.3, -0.6, 0.8),
             F32(DIMS(1, 3), -0.6, -0.9, -0.6), NULL, NULL);
    c.a.axis = -2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2, 3), -0.6013854, -1.052424, 0.7016163, 0.1002309, 0.6013853, 0.8018472,
           -0.7873333, 0.147625, 0.6889166, -0.29525, 0.8857499, -0.7873333);
}
END_TEST

/* ------------------------------------------------------------ RotaryEmbedding */

/* 4-D halves with per-position caches; 4-D interleaved with position_ids;
 * 3-D (num_heads) rotating 2 of 3 dims with position_ids; 3-D interleaved
 * rotating 4 of 4 dims per position cache. */
START_TEST(rotary_forms)
{
    EXPECT(run1(at23(ROT, 3,
                     F32(DIMS(1, 2, 2, 4), -0.3, -0.1, 0.8, 0.4, -0.3, -1, -0.7, 1, -0.1, 0.4, -0.9, -0.9, 0.7, 0.2,
                         -0.4, -0.4),
                     F32(DIMS(1, 2, 2), -0.8, -0.7, -1, 0.7), F32(DIMS(1, 2, 2), -0.1, -0.7, 0.5, -0.6), NULL)),
           XF_DT_FLOAT, DIMS(1, 2, 2, 4), 0.32, 0.35, -0.61, -0.21, 0.65, -0.09999996, 0.55, 1.3, -0.00999999, -0.91,
           0.73, 0.35, -0.5, -0.1, 0.75, -0.4);
    node_case c = at23(ROT, 4, F32(DIMS(1, 1, 3, 4), -0.9, 0.2, 0.8, -0.9, 0.6, -0.6, -0.8, -1, -0.4, 0.5, 0, 0.7),
                       F32(DIMS(5, 2), -0.6, -0.4, -0.5, 1, 0.9, -0.3, -0.1, -0.4, 0.5, -0.9),
                       F32(DIMS(5, 2), -0.9, -0.2, -0.5, 0.7, 0.5, 0.1, 0.3, 0.4, 0.6, 0.9), I64(DIMS(1, 3), 4, 0, 2));
    c.a.attn.interleaved = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 3, 4), -0.57, -0.44, 0.08999997, 1.53, -0.9, -0.18, 0.12, 0.56, -0.61,
           0.25, -0.07, -0.21);
    c = at23(ROT, 4, F32(DIMS(1, 2, 6), -0.7, 0.3, -0.7, -0.1, 0.6, 0.8, 0.5, -0.9, -0.3, -0.7, 1, -0.7),
             F32(DIMS(3, 1), -0.5, -0.3, -0.9), F32(DIMS(3, 1), 0.7, 0.3, -0.7), I64(DIMS(1, 2), 2, 1));
    c.a.attn.num_heads = 2;
    c.a.attn.rotary_dim = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 6), 0.84, 0.22, -0.7, 0.51, -0.47, 0.8, 0.12, 0.42, -0.3, -0.09, -0.51,
           -0.7);
    c = at23(ROT, 3, F32(DIMS(1, 1, 8), 0, -0.8, 0.2, -0.5, -0.9, -0.8, 0.1, 0.3), F32(DIMS(1, 1, 2), -0.4, 0.3),
             F32(DIMS(1, 1, 2), -0.3, -0.7), NULL);
    c.a.attn.num_heads = 2;
    c.a.attn.rotary_dim = 4;
    c.a.attn.interleaved = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 8), -0.24, 0.32, -0.29, -0.29, 0.12, 0.59, 0.24, 0.02);
}
END_TEST

/* ------------------------------------------------------------ Attention */

/* 4-D, default scale, qk_matmul_output the raw scores. */
START_TEST(attention_4d)
{
    xf_tensor *o[4];
    node_case c = attention(F32(DIMS(1, 2, 2, 2), -0.4, -0.2, 0.8, -0.8, -0.8, 0.1, 0.9, 0.8),
                            F32(DIMS(1, 2, 3, 2), 0.4, -0.9, 0.6, 0.4, -0.7, -0.1, -0.9, 0.6, 0.4, 0.6, 0.5, -0.5),
                            F32(DIMS(1, 2, 3, 2), 0.6, -0.5, -0.7, -0.2, 0, -0.4, 0.2, 0.2, -0.5, 0.2, -0.3, 0.5),
                            NULL, NULL, NULL, 4, false);
    run_case(&c, o);
    EXPECT(o[0], XF_DT_FLOAT, DIMS(1, 2, 2, 2), 0.01650103, -0.3809467, 0.1194222, -0.3960882, -0.08711488, 0.2662239,
           -0.2907373, 0.2854064);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 2, 2, 3), 0.01414214, -0.2262742, 0.2121321, 0.7353911, 0.1131371, -0.3394113,
           0.5515433, -0.1838478, -0.3181981, -0.2333452, 0.5939697, 0.03535533);
}
END_TEST

#define Q3 F32(DIMS(1, 2, 8), -0.4, 0.6, -0.2, 0.1, 0.3, 0, -0.5, 1, -0.8, -0.4, 0.1, -0.9, -0.7, 0.6, 0.6, 0.3)
#define K3 F32(DIMS(1, 3, 4), 0.8, 0.5, -0.4, 0.3, -0.3, 0.5, -0.2, -0.7, 0.8, 0.4, 0.5, 0.1)
#define V3 F32(DIMS(1, 3, 2), 0.6, -0.1, 0.1, -0.9, 0.1, 0.6)

/* 3-D, 4 query heads on 2 key/value heads (V's head size 1), softcap 0.5:
 * every output, qk_matmul_output after softcap (mode 1).  Mode 0 gives the
 * scores before softcap, as ONNX defines it and ONNX Runtime computes it
 * (ONNX's reference gives the softcapped ones). */
START_TEST(attention_3d_gqa_softcap)
{
    xf_tensor *o[4];
    node_case c = attention(Q3, K3, V3, NULL, NULL, NULL, 4, true);
    c.a.attn.num_heads = 4;
    c.a.attn.kv_num_heads = 2;
    c.a.attn.qk_mode = 1;
    c.a.attn.softcap = 0.5f;
    run_case(&c, o);
    EXPECT(o[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.2523232, 0.2582278, -0.09656483, -0.07839639, 0.2401743, 0.2666972,
           -0.1289414, -0.02305996);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 2, 3, 2), 0.8, 0.5, -0.3, 0.5, 0.8, 0.4, -0.4, 0.3, -0.2, -0.7, 0.5, 0.1);
    EXPECT(o[2], XF_DT_FLOAT, DIMS(1, 2, 3, 1), 0.6, 0.1, 0.1, -0.1, -0.9, 0.6);
    EXPECT(o[3], XF_DT_FLOAT, DIMS(1, 4, 2, 3), -0.01413836, 0.2663724, -0.0563284, -0.4149694, 0.02825415, -0.405744,
           -0.07716032, 0.07716033, -0.0840475, -0.2401057, -0.2953767, -0.188252, -0.08404751, -0.04232488,
           0.1045032, 0.2860161, -0.188252, -0.1942881, 0.3044297, -0.3451499, -0.1045032, -0.1045032, -0.2177607,
           0.2177607);
    c = attention(Q3, K3, V3, NULL, NULL, NULL, 4, false);
    c.a.attn.num_heads = 4;
    c.a.attn.kv_num_heads = 2;
    c.a.attn.softcap = 0.5f;
    run_case(&c, o);
    xf_tensor_release(o[0]);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 4, 2, 3), -0.01414213, 0.2969849, -0.05656853, -0.5939697, 0.02828428, -0.5656855,
           -0.07778174, 0.07778175, -0.08485281, -0.2616295, -0.3394113, -0.1979899, -0.08485282, -0.04242641,
           0.106066, 0.3252691, -0.1979899, -0.205061, 0.3535534, -0.4242641, -0.106066, -0.106066, -0.2333453,
           0.2333453);
}
END_TEST

/* Causal without past (the probabilities, mode 3), and with 2 past rows:
 * the frontier moves by the past's length; mode 2 holds the bias, -inf
 * beyond it. */
START_TEST(attention_causal)
{
    xf_tensor *o[4];
    node_case c = attention(F32(DIMS(1, 1, 3, 2), 0.4, 0.6, 0, 0.8, -0.8, 0.8),
                            F32(DIMS(1, 1, 3, 2), -0.3, -0.8, 0.2, -0.1, -0.1, 0.7),
                            F32(DIMS(1, 1, 3, 2), -0.7, 0.2, -0.2, 0.1, 0, -0.7), NULL, NULL, NULL, 4, false);
    c.a.attn.unidirectional = 1;
    c.a.attn.qk_mode = 3;
    run_case(&c, o);
    EXPECT(o[0], XF_DT_FLOAT, DIMS(1, 1, 3, 2), -0.7, 0.2, -0.4011393, 0.1402279, -0.2196716, -0.2730402);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 1, 3, 3), 1, 0, 0, 0.4022786, 0.5977214, 0, 0.2377509, 0.26623, 0.4960191);
    c = attention(F32(DIMS(1, 1, 2, 2), 0, 0.7, -0.7, -1), F32(DIMS(1, 1, 2, 2), -0.9, -0.1, 0.9, -0.9),
                  F32(DIMS(1, 1, 2, 2), 1, 0.1, -0.8, -0.2), NULL, F32(DIMS(1, 1, 2, 2), -0.6, 0.4, 0.1, -0.4),
                  F32(DIMS(1, 1, 2, 2), -0.5, 0.7, 0.5, -0.1), 4, true);
    c.a.attn.unidirectional = 1;
    c.a.attn.qk_mode = 2;
    run_case(&c, o);
    EXPECT(o[0], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0.2515589, 0.2896649, 0.1610727, 0.09861976);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 1, 4, 2), -0.6, 0.4, 0.1, -0.4, -0.9, -0.1, 0.9, -0.9);
    EXPECT(o[2], XF_DT_FLOAT, DIMS(1, 1, 4, 2), -0.5, 0.7, 0.5, -0.1, 1, 0.1, -0.8, -0.2);
    EXPECT(o[3], XF_DT_FLOAT, DIMS(1, 1, 2, 4), 0.1979899, -0.1979899, -0.04949748, -INFINITY, 0.01414216, 0.2333453,
           0.516188, 0.1909188);
}
END_TEST

/* A bool mask per batch, broadcast over heads and rows: batch 1 sees no
 * key, and its rows are zeros.  A float mask shorter than the keys (the
 * last key masked), scale 0.5, softmax in double. */
START_TEST(attention_masks)
{
    EXPECT(run1(attention(F32(DIMS(2, 1, 2, 2), -0.2, 0.5, 0.9, -0.8, -0.7, -0.3, 0, -0.9),
                          F32(DIMS(2, 1, 3, 2), -0.9, -0.6, -0.2, 0.5, 0.2, -0.9, -0.9, -0.1, 0.7, 0.8, -0.3, 0.8),
                          F32(DIMS(2, 1, 3, 2), 0.9, -0.2, 0.5, -0.3, -0.7, 0.2, -0.8, 0.3, 0.6, 0.8, -0.1, -0.8),
                          BOOLS(DIMS(2, 1, 1, 3), 1, 0, 1, 0, 0, 0), NULL, NULL, 1, false)),
           XF_DT_FLOAT, DIMS(2, 1, 2, 2), 0.2040589, -0.02601473, -0.227507, 0.08187674, 0, 0, 0, 0);
    xf_tensor *o[4];
    node_case c = attention(F32(DIMS(1, 1, 2, 2), 0.8, 0.7, 0.9, 0.2), F32(DIMS(1, 1, 3, 2), 0.3, -0.3, -0.6, -0.4, 0.4, -0.4),
                            F32(DIMS(1, 1, 3, 2), 0.4, 0, -0.1, 0.9, -0.7, 0), F32(DIMS(2, 2), -0.7, 0.9, 0, -0.3),
                            NULL, NULL, 4, false);
    c.a.attn.scale = 0.5f;
    c.a.attn.softmax_precision = XF_DT_DOUBLE;
    c.a.attn.qk_mode = 2;
    run_case(&c, o);
    EXPECT(o[0], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0.01529348, 0.6924717, 0.2357525, 0.2956455);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 1, 2, 3), -0.685, 0.52, -INFINITY, 0.105, -0.61, -INFINITY);
}
END_TEST

/* Opset 24's nonpad_kv_seqlen with causal masking: the frontier is
 * nonpad_kv_seqlen[b] - S, and batch 1's first row sees no key. */
START_TEST(attention_nonpad)
{
    node_case c = make_case(ATT, 7, F32(DIMS(2, 1, 2, 2), -0.7, 0.2, -0.2, -0.7, -0.9, -0.2, 0.2, 0),
                            F32(DIMS(2, 1, 3, 2), 0.8, 0.8, 0.9, 0.6, 0, 0, -0.2, -0.2, -0.9, 0.6, -0.5, -0.9),
                            F32(DIMS(2, 1, 3, 2), -0.1, 0.4, -0.1, -0.3, 0.3, -0.7, -1, 0.2, 0.1, 0.7, -0.2, 0.6), NULL,
                            NULL, NULL, I64(DIMS(2), 3, 1));
    c.opset = 24;
    c.a.attn.unidirectional = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 1, 2, 2), -0.1, 0.06360495, 0.0773618, -0.2908134, 0, 0, -1, 0.2);
}
END_TEST

/* Opset 25's windows: causal after one past row with one key to the left
 * (mode 3); one key to the right and none to the left. */
START_TEST(attention_window)
{
    xf_tensor *o[4];
    node_case c = attention(F32(DIMS(1, 1, 3, 2), -1, -0.9, 0.2, -0.5, -0.9, -0.7),
                            F32(DIMS(1, 1, 3, 2), -0.3, -0.3, 0.1, 0.8, -0.3, -0.6),
                            F32(DIMS(1, 1, 3, 2), 0.2, -1, -0.2, -0.4, -0.2, -0.9), NULL, F32(DIMS(1, 1, 1, 2), 0.1, 0.2),
                            F32(DIMS(1, 1, 1, 2), 0.5, 0.9), 4, false);
    c.opset = 25;
    c.a.attn.unidirectional = 1;
    c.a.attn.left_window = 1;
    c.a.attn.qk_mode = 3;
    run_case(&c, o);
    EXPECT(o[0], XF_DT_FLOAT, DIMS(1, 1, 3, 2), 0.3062317, -0.3271994, 0.03293147, -0.7493972, -0.2, -0.7603084);
    EXPECT(o[1], XF_DT_FLOAT, DIMS(1, 1, 3, 4), 0.3541056, 0.6458944, 0, 0, 0, 0.5823287, 0.4176713, 0, 0, 0,
           0.2793832, 0.7206168);
    c = attention(F32(DIMS(1, 1, 3, 2), -0.3, 0.3, -0.1, -0.6, 0.8, 0.5), F32(DIMS(1, 1, 3, 2), 0.9, 0.6, 0.8, -0.7, -1, -0.6),
                  F32(DIMS(1, 1, 3, 2), -0.2, 0.4, -0.1, 0, 0.5, -0.9), NULL, NULL, NULL, 1, false);
    c.opset = 25;
    c.a.attn.left_window = 0;
    c.a.attn.right_window = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 3, 2), -0.1563298, 0.2253193, 0.2127203, -0.4690804, 0.5, -0.9);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(shape_errors)
{
#define Z(...) iota_f32(DIMS(__VA_ARGS__), 0) /* values that do not matter */
    expect_infer_error(attention(Z(1, 2, 4), Z(1, 2, 4), Z(1, 2, 4), NULL, NULL, NULL,
                                 1, false),
                       "3-D inputs need q_num_heads and kv_num_heads");
    expect_infer_error(attention(Z(1, 3, 1, 2), Z(1, 2, 1, 2), Z(1, 2, 1, 2), NULL,
                                 NULL, NULL, 1, false),
                       "not a multiple");
    expect_infer_error(attention(Z(1, 1, 1, 2), Z(1, 1, 2, 2), Z(1, 1, 2, 2),
                                 Z(1, 3), NULL, NULL, 1, false),
                       "attn_mask 1x3 does not broadcast");
    expect_infer_error(attention(Z(1, 1, 1, 2), Z(1, 1, 1, 2), Z(1, 1, 1, 2), NULL,
                                 Z(1, 1, 1, 2), NULL, 1, false),
                       "past_key and past_value come together");
    expect_infer_error(attention(Z(1, 1, 1, 2), Z(1, 1, 1, 3), Z(1, 1, 1, 2), NULL,
                                 NULL, NULL, 1, false),
                       "are not (B, Nq, S, H)");
    node_case c = attention(Z(1, 1, 1, 2), Z(1, 1, 1, 2), Z(1, 1, 1, 2), NULL, NULL,
                            NULL, 1, false);
    c.opset = 25;
    c.a.attn.num_heads = 1;
    expect_infer_error(c, "go with 3-D inputs from opset 25");
    expect_infer_error(at23(RMS, 2, Z(2, 3), Z(2), NULL, NULL), "does not broadcast");
    c = at23(RMS, 2, Z(2, 3, 4), Z(3, 1), NULL, NULL);
    c.a.axis = 1;
    expect_infer_status(c, XF_ERR_UNSUPPORTED, "other than along its leading dims");
    expect_infer_error(at23(ROT, 3, Z(1, 2, 4), Z(1, 2, 2), Z(1, 2, 2), NULL),
                       "do not agree");
    expect_infer_error(at23(ROT, 4, Z(1, 1, 2, 4), Z(3, 1), Z(3, 1),
                            I64(DIMS(1, 2), 0, 1)),
                       "is not (max position, 2)");
    expect_run_error(at23(ROT, 4, Z(1, 1, 2, 4), Z(3, 2), Z(3, 2), I64(DIMS(1, 2), 0, 3)),
                     "position id 3 is outside the cache's 3 rows");
}
#undef Z
END_TEST

/* ------------------------------------------------------------ the cpu backend */

static void cpu_agrees(node_case c, const char *what)
{
    xf_graph *g = case_graph(&c);
    xf_bt_check_graph(g, c.opset, "cpu", true, 1e-5, 1e-5, what);
    xf_graph_free(g);
    release_case(&c);
}

static xf_tensor *rnd(int ndim, const int64_t *dims)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &s);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        ((float *)t->data)[i] = (float)((i * 37 % 23) - 11) / 11.0f;
    return t;
}

/* Attention through oneDNN's products: 3-D grouped heads with a bool mask
 * and every output, 4-D causal with past and a float mask; RMSNormalization
 * through the SimplifiedLayerNormalization kernel (and its repeated scale on
 * cpu_ref's); RotaryEmbedding on cpu_ref's kernel. */
START_TEST(cpu_backend)
{
    uint8_t bits[2 * 4 * 6];
    for (int i = 0; i < 48; i++)
        bits[i] = i % 6 == 0 || i % 5 != 1;
    node_case c = attention(rnd(DIMS(2, 4, 16)), rnd(DIMS(2, 6, 8)), rnd(DIMS(2, 6, 12)),
                            mk(XF_DT_BOOL, 4, (int64_t[]){2, 1, 4, 6}, bits), NULL, NULL, 4, true);
    c.feed = 7;
    c.a.attn.num_heads = 4;
    c.a.attn.kv_num_heads = 2;
    c.a.attn.qk_mode = 2;
    c.a.attn.softcap = 2.0f;
    cpu_agrees(c, "Attention 3-D GQA, bool mask");
    c = attention(rnd(DIMS(1, 2, 3, 4)), rnd(DIMS(1, 2, 3, 4)), rnd(DIMS(1, 2, 3, 4)), rnd(DIMS(3, 5)),
                  rnd(DIMS(1, 2, 2, 4)), rnd(DIMS(1, 2, 2, 4)), 4, true);
    c.feed = 0x3f;
    c.a.attn.unidirectional = 1;
    c.a.attn.qk_mode = 3;
    cpu_agrees(c, "Attention 4-D causal, past, float mask");
    c = at23(RMS, 2, rnd(DIMS(2, 5, 16)), rnd(DIMS(16)), NULL, NULL);
    c.feed = 1;
    cpu_agrees(c, "RMSNormalization");
    c = at23(RMS, 2, rnd(DIMS(2, 5, 16)), rnd(DIMS(1, 16)), NULL, NULL);
    c.feed = 1;
    c.a.axis = 1;
    cpu_agrees(c, "RMSNormalization, a repeated scale");
    c = at23(ROT, 4, rnd(DIMS(2, 3, 12)), rnd(DIMS(8, 2)), rnd(DIMS(8, 2)), I64(DIMS(2, 3), 0, 1, 2, 7, 6, 5));
    c.feed = 1;
    c.a.attn.num_heads = 2;
    c.a.attn.rotary_dim = 4;
    cpu_agrees(c, "RotaryEmbedding");
}
END_TEST

/* ------------------------------------------------------------ import and export */

static Onnx__GraphProto *one_node(Onnx__NodeProto *n, int n_in, const char *const *ins, const int64_t (*dims)[4],
                                  const int *ranks, const int *types)
{
    Onnx__GraphProto *g = mk_graph("g");
    for (int i = 0; i < n_in; i++)
        if (ins[i][0])
            PUSH(g->n_input, g->input, mk_vi(ins[i], types[i], ranks[i], dims[i], NULL));
    PUSH(g->n_node, g->node, n);
    for (size_t k = 0; k < n->n_output; k++)
        if (n->output[k][0])
            PUSH(g->n_output, g->output, mk_vi(n->output[k], XF_DT_FLOAT, -1, NULL, NULL));
    return g;
}

/* Attention of 3-D (1, 4, 16), (1, 6, 8) x2 with a mask, the past and
 * (at opset 24) nonpad_kv_seqlen as graph inputs, every attribute set
 * (opset 25's windows when window). */
static Onnx__GraphProto *attention_graph(bool nonpad, int precision, bool window)
{
    static const int64_t dims[7][4] = {{1, 4, 16}, {1, 6, 8}, {1, 6, 8}, {4, 6}, {1, 2, 2, 4}, {1, 2, 2, 4}, {1}};
    static const int ranks[] = {3, 3, 3, 2, 4, 4, 1};
    static const int types[] = {XF_DT_FLOAT, XF_DT_FLOAT, XF_DT_FLOAT, XF_DT_BOOL, XF_DT_FLOAT, XF_DT_FLOAT, XF_DT_INT64};
    const char *node_ins[8] = {"q", "k", "v", "m", nonpad ? "" : "pk", nonpad ? "" : "pv", nonpad ? "np" : NULL, NULL};
    Onnx__NodeProto *n = mk_node("Attention", "att", node_ins, (const char *[]){"y", "pko", "pvo", "qk", NULL});
    attr_int(n, "is_causal", 1);
    attr_int(n, "q_num_heads", 4);
    attr_int(n, "kv_num_heads", 2);
    attr_int(n, "qk_matmul_output_mode", 3);
    attr_float(n, "scale", 0.125f);
    attr_float(n, "softcap", 30.0f);
    attr_int(n, "softmax_precision", precision);
    if (window) {
        attr_int(n, "left_window_size", 3);
        attr_int(n, "right_window_size", 0);
    }
    const char *graph_ins[7] = {"q", "k", "v", "m", node_ins[4], node_ins[5], nonpad ? "np" : ""};
    return one_node(n, 7, graph_ins, dims, ranks, types);
}

static Onnx__GraphProto *rms_rotary_graph(int stash_type)
{
    static const char *const ins[] = {"x", "s", "c", "sn", "p"};
    static const int64_t dims[5][4] = {{1, 3, 8}, {8}, {6, 2}, {6, 2}, {1, 3}};
    static const int ranks[] = {3, 1, 2, 2, 2};
    static const int types[] = {XF_DT_FLOAT, XF_DT_FLOAT, XF_DT_FLOAT, XF_DT_FLOAT, XF_DT_INT64};
    Onnx__GraphProto *g = one_node(mk_node("RMSNormalization", "rms", (const char *[]){"x", "s", NULL},
                                           (const char *[]){"h", NULL}),
                                   5, ins, dims, ranks, types);
    Onnx__NodeProto *rms = g->node[0];
    attr_int(rms, "axis", -1);
    attr_float(rms, "epsilon", 1e-6f);
    attr_int(rms, "stash_type", stash_type);
    Onnx__NodeProto *rot = mk_node("RotaryEmbedding", "rot", (const char *[]){"h", "c", "sn", "p", NULL},
                                   (const char *[]){"y", NULL});
    attr_int(rot, "interleaved", 1);
    attr_int(rot, "rotary_embedding_dim", 4);
    attr_int(rot, "num_heads", 2);
    PUSH(g->n_node, g->node, rot);
    g->output[0]->name = (char *)"y";
    return g;
}

/* Export of m at the default-domain opset `opset` is refused naming node
 * and what; frees m. */
static void refused_at(xf_model *m, int64_t opset, const char *node, const char *what)
{
    for (int i = 0; i < m->n_opsets; i++)
        if (!m->opsets[i].domain[0])
            m->opsets[i].version = opset;
    expect_export_refused(m, node, what, NULL);
    xf_model_free(m);
}

/* Every attribute of the three ops survives import and export at opset 23
 * and 24 (nonpad_kv_seqlen) and 25 (windows); the forms xflow does not run
 * stay opaque: before opset 23, nonpad_kv_seqlen at 23, windows at 24,
 * softmax_precision float16, no Y, stash_type 0.  A model of opset 22 cannot take them back. */
START_TEST(attributes_round_trip)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(attention_graph(false, XF_DT_DOUBLE, false), 23, counts);
    ck_assert_int_eq(counts[ATT], 1);
    const xf_node *n = &m->graph->nodes[find_node_op(m->graph, ATT)];
    const xf_attn_attrs *t = &n->attrs.attn;
    ck_assert(t->unidirectional == 1 && t->num_heads == 4 && t->kv_num_heads == 2 && t->qk_mode == 3 &&
              t->scale == 0.125f && t->softcap == 30.0f && t->softmax_precision == XF_DT_DOUBLE);
    ck_assert_int_eq(m->graph->values[n->outputs[3]].shape.dims[3], 8);
    xf_model_free(roundtrip(m));
    refused_at(m, 22, "node 'att' (Attention)", "needs opset 23");
    m = load_counting(attention_graph(true, XF_DT_FLOAT, false), 24, counts);
    ck_assert_int_eq(counts[ATT], 1);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
    xf_model_free(load_counting(attention_graph(true, XF_DT_FLOAT, false), 23, counts));
    ck_assert_int_eq(counts[ATT], 0);
    m = load_counting(attention_graph(true, XF_DT_FLOAT, true), 25, counts);
    ck_assert_int_eq(counts[ATT], 1);
    t = &m->graph->nodes[find_node_op(m->graph, ATT)].attrs.attn;
    ck_assert(t->left_window == 3 && t->right_window == 0);
    xf_model_free(roundtrip(m));
    refused_at(m, 24, "node 'att' (Attention with a window)", "needs opset 25");
    xf_model_free(load_counting(attention_graph(false, XF_DT_FLOAT, true), 24, counts));
    ck_assert_int_eq(counts[ATT], 0);
    xf_model_free(load_counting(attention_graph(false, XF_DT_FLOAT16, false), 23, counts));
    ck_assert_int_eq(counts[ATT], 0);
    Onnx__GraphProto *g = attention_graph(false, XF_DT_FLOAT, false);
    g->node[0]->output[0] = (char *)""; /* present_key and the rest without Y */
    g->output[0] = g->output[--g->n_output];
    xf_model_free(load_counting(g, 23, counts));
    ck_assert_int_eq(counts[ATT], 0);
    m = load_counting(rms_rotary_graph(1), 23, counts);
    ck_assert(counts[RMS] == 1 && counts[ROT] == 1);
    const xf_node *r = &m->graph->nodes[find_node_op(m->graph, RMS)];
    ck_assert(r->attrs.axis == -1 && r->attrs.epsilon == 1e-6f);
    t = &m->graph->nodes[find_node_op(m->graph, ROT)].attrs.attn;
    ck_assert(t->interleaved == 1 && t->rotary_dim == 4 && t->num_heads == 2);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
    xf_model_free(load_counting(rms_rotary_graph(0), 23, counts));
    ck_assert(counts[RMS] == 0 && counts[ROT] == 1);
    xf_model_free(load_counting(rms_rotary_graph(1), 22, counts));
    ck_assert(counts[RMS] == 0 && counts[ROT] == 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("opset23");
    TCase *tc = tcase_create("opset23");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, rms_norm_axes);
    tcase_add_test(tc, rotary_forms);
    tcase_add_test(tc, attention_4d);
    tcase_add_test(tc, attention_3d_gqa_softcap);
    tcase_add_test(tc, attention_causal);
    tcase_add_test(tc, attention_masks);
    tcase_add_test(tc, attention_nonpad);
    tcase_add_test(tc, attention_window);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, cpu_backend);
    tcase_add_test(tc, attributes_round_trip);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
