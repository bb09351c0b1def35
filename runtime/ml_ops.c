/* ONNX-ML (domain ai.onnx.ml): the ops scikit-learn's converters
 * (skl2onnx) and others write for preprocessing, linear models, tree
 * ensembles, support vector machines and encoders, run on the host as
 * ONNX Runtime runs them -- its binary classifiers' scores, its post
 * transforms (a logistic exact on both sides, its probit's approximate
 * inverse error function) -- so that such a model gives ONNX Runtime's
 * outputs here and xflowc can check it.  Import keeps these nodes opaque
 * with their attributes (xf_opaque_reals, xf_opaque_strings); the session
 * runs them like control flow, from a plan made once (control_flow.c),
 * and holds the strings they read and write on the host.  This file has
 * the dispatch, the shared helpers, the preprocessing ops and the linear
 * models; the trees, SVMs, encoders and the ops on maps (DictVectorizer,
 * CastMap, ZipMap) have files of their own (ml_trees.c, ml_svm.c,
 * ml_encoders.c, ml_maps.c), and ONNX's own string ops StringConcat, StringSplit
 * and StringNormalizer, dispatched here too, string_ops.c; its
 * TfIdfVectorizer tfidf.c; its RegexFullMatch and ONNX Runtime's
 * Tokenizer regex_ops.c; its ImageDecoder image_decoder.c; its loss ops loss_ops.c; the optimizers of
 * ai.onnx.preview.training training_ops.c. */
#include "ml_ops.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum ml_kind {
    ML_SCALER,
    ML_NORMALIZER,
    ML_BINARIZER,
    ML_IMPUTER,
    ML_ARRAY_FEATURE_EXTRACTOR,
    ML_LINEAR_REGRESSOR,
    ML_LINEAR_CLASSIFIER,
    ML_TREE_REGRESSOR,
    ML_TREE_CLASSIFIER,
    ML_SVM_REGRESSOR,
    ML_SVM_CLASSIFIER,
    ML_ZIP_MAP,
    ML_TREE_ENSEMBLE,
    ML_LABEL_ENCODER,
    ML_CATEGORY_MAPPER,
    ML_ONE_HOT_ENCODER,
    ML_FEATURE_VECTORIZER,
    ML_DICT_VECTORIZER,
    ML_CAST_MAP,
    ML_STRING_CONCAT, /* ONNX's own string ops from here: the default domain */
    ML_STRING_SPLIT,
    ML_STRING_NORMALIZER,
    ML_TFIDF,
    ML_REGEX_FULL_MATCH,
    ML_IMAGE_DECODER,
    ML_NLL_LOSS,
    ML_SCE_LOSS,
    ML_TOKENIZER, /* ONNX Runtime's (com.microsoft) */
    ML_ADAGRAD,   /* ai.onnx.preview.training's optimizers */
    ML_MOMENTUM,
    ML_ADAM,
    ML_KINDS
} ml_kind;

static const char *const ml_names[ML_KINDS] = {
    "Scaler", "Normalizer", "Binarizer", "Imputer", "ArrayFeatureExtractor", "LinearRegressor", "LinearClassifier",
    "TreeEnsembleRegressor", "TreeEnsembleClassifier", "SVMRegressor", "SVMClassifier", "ZipMap", "TreeEnsemble",
    "LabelEncoder", "CategoryMapper", "OneHotEncoder", "FeatureVectorizer", "DictVectorizer", "CastMap",
    "StringConcat", "StringSplit",
    "StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "ImageDecoder", "NegativeLogLikelihoodLoss",
    "SoftmaxCrossEntropyLoss", "Tokenizer", "Adagrad", "Momentum", "Adam",
};

struct xf_rt_ml {
    ml_kind kind;
    const xf_node *node;
    int transform;
    xf_ml_trees *trees;
    xf_ml_tfidf *tfidf;
    xf_ml_regex *regex;
    xf_ml_dict *dict;
    size_t max_bytes;
};

static int kind_of(const xf_node *n)
{
    if (n->op != XF_OP_OPAQUE || !n->opaque)
        return -1;
    const char *d = n->opaque->domain;
    bool ml = strcmp(d, "ai.onnx.ml") == 0, onnx = !d[0] || strcmp(d, "ai.onnx") == 0;
    bool ms = strcmp(d, "com.microsoft") == 0, training = strcmp(d, "ai.onnx.preview.training") == 0;
    for (int k = 0; k < ML_KINDS; k++)
        if ((k < ML_STRING_CONCAT ? ml : k < ML_TOKENIZER ? onnx : k == ML_TOKENIZER ? ms : training) &&
            strcmp(n->opaque->op_type, ml_names[k]) == 0)
            return k;
    return -1;
}

bool xf_rt_ml_node(const xf_node *n) { return kind_of(n) >= 0; }

/* ------------------------------------------------------------ attributes and helpers */

xf_status xf_ml_fail(const xf_node *n, xf_error *err, xf_status st, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return xf_error_set(err, st, "node '%s' (%s): %s", n->name ? n->name : "", n->opaque->op_type, what);
}

const int64_t *xf_ml_ints(const xf_node *n, const char *a, int64_t *count)
{
    const xf_opaque_ints *v = xf_opaque_find_ints(n->opaque, a);
    *count = v ? v->n : 0;
    return v ? v->v : NULL;
}

const double *xf_ml_reals(const xf_node *n, const char *a, int64_t *count)
{
    const xf_opaque_reals *v = xf_opaque_find_reals(n->opaque, a);
    *count = v ? v->n : 0;
    return v ? v->v : NULL;
}

const char *xf_ml_string(const xf_node *n, const char *a, const char *def)
{
    const xf_opaque_strings *v = xf_opaque_find_strings(n->opaque, a);
    return v && v->n == 1 ? v->v[0] : def;
}

xf_status xf_ml_transform(const xf_node *n, int *t, xf_error *err)
{
    static const char *const names[] = {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"};
    const char *name = xf_ml_string(n, "post_transform", "NONE");
    for (*t = 0; *t < 5; (*t)++)
        if (strcmp(name, names[*t]) == 0)
            return XF_OK;
    return xf_ml_fail(n, err, XF_ERR_INVALID,
                      "post_transform '%s' is none of NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT", name);
}

static float logistic(float v)
{
    float e = 1.0f / (1.0f + expf(-fabsf(v)));
    return v < 0 ? 1.0f - e : e;
}

/* ONNX Runtime's probit: sqrt(2) erfinv(2v - 1) with Winitzki's
 * approximation of erfinv (a = 0.147). */
static float probit(float v)
{
    float x = 2.0f * v - 1.0f, sgn = x < 0 ? -1.0f : 1.0f;
    x = (1.0f - x) * (1.0f + x);
    float lg = logf(x), a = 2.0f / (3.14159f * 0.147f) + 0.5f * lg, b = 1.0f / 0.147f * lg;
    return 1.41421356f * sgn * sqrtf(-a + sqrtf(a * a - b));
}

int64_t xf_ml_write_scores(float *s, int64_t n, int t, int add_second, float *z)
{
    if (n >= 2) {
        float mx = -3.402823466e38f, sum = 0.0f, neg_mx;
        switch (t) {
        case ML_PROBIT:
            for (int64_t i = 0; i < n; i++)
                s[i] = probit(s[i]);
            break;
        case ML_LOGISTIC:
            for (int64_t i = 0; i < n; i++)
                s[i] = logistic(s[i]);
            break;
        case ML_SOFTMAX:
        case ML_SOFTMAX_ZERO: /* SOFTMAX_ZERO leaves out scores within 1e-7 of 0 */
            for (int64_t i = 0; i < n; i++)
                mx = s[i] > mx ? s[i] : mx;
            neg_mx = expf(-mx);
            for (int64_t i = 0; i < n; i++) {
                if (t == ML_SOFTMAX || s[i] > 1e-7f || s[i] < -1e-7f) {
                    s[i] = expf(s[i] - mx);
                    sum += s[i];
                } else {
                    s[i] *= neg_mx;
                }
            }
            for (int64_t i = 0; i < n; i++)
                s[i] /= sum;
            break;
        default:
            break;
        }
        memcpy(z, s, sizeof *z * (size_t)n);
        return n;
    }
    if (n < 1)
        return 0;
    if (t == ML_PROBIT) {
        z[0] = probit(s[0]);
        return 1;
    }
    if (add_second == 0 || add_second == 1) {
        z[0] = 1.0f - s[0];
        z[1] = s[0];
    } else if (add_second == 2 || add_second == 3) {
        z[0] = t == ML_LOGISTIC ? logistic(-s[0]) : -s[0];
        z[1] = t == ML_LOGISTIC ? logistic(s[0]) : s[0];
    } else {
        z[0] = s[0];
        return 1;
    }
    return 2;
}

static bool numeric(xf_dtype t)
{
    return t == XF_DT_FLOAT || t == XF_DT_DOUBLE || t == XF_DT_INT32 || t == XF_DT_INT64;
}

xf_status xf_ml_rows(const xf_node *n, const xf_tensor *x, double **v, int64_t *rows, int64_t *cols, xf_error *err)
{
    *v = NULL;
    bool elementwise = strcmp(n->opaque->op_type, "Binarizer") == 0; /* of any rank: one row of all */
    if ((!elementwise && (x->shape.ndim < 1 || x->shape.ndim > 2)) || !numeric(x->dtype)) {
        char buf[64];
        return xf_ml_fail(n, err, XF_ERR_INVALID, "X is %s of %s; it takes rank 1 or 2 of float, double, int32 or "
                          "int64", xf_shape_str(&x->shape, buf, sizeof buf), xf_dtype_name(x->dtype));
    }
    int64_t total = xf_tensor_numel(x);
    *rows = x->shape.ndim == 1 || elementwise ? 1 : x->shape.dims[0];
    *cols = elementwise ? total : x->shape.dims[x->shape.ndim - 1];
    if (!(*v = malloc(sizeof **v * (size_t)(total + 1))))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < total; i++)
        (*v)[i] = xf_tensor_get_f64(x, i);
    return XF_OK;
}

xf_ml_labels xf_ml_labels_of(const xf_node *n, const char *ints_attr)
{
    xf_ml_labels l = {0};
    const xf_opaque_strings *s = xf_opaque_find_strings(n->opaque, "classlabels_strings");
    if (s) {
        l.n = s->n;
        l.strings = s->v;
    } else {
        l.ints = xf_ml_ints(n, ints_attr, &l.n);
    }
    return l;
}

xf_tensor *xf_ml_label_tensor(const xf_ml_labels *l, int64_t rows, xf_error *err)
{
    xf_shape s = xf_shape_make(1, &rows);
    xf_tensor *y = xf_tensor_create(l->strings ? XF_DT_STRING : XF_DT_INT64, &s);
    if (!y)
        xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    return y;
}

bool xf_ml_set_label(xf_tensor *y, int64_t r, const xf_ml_labels *l, int64_t which)
{
    bool known = which >= 0 && which < l->n;
    int64_t plain = which == ML_LABEL_1 ? 1 : which == ML_LABEL_0 ? 0 : which;
    if (!l->strings) {
        ((int64_t *)y->data)[r] = known ? l->ints[which] : plain;
        return true;
    }
    char digits[24];
    snprintf(digits, sizeof digits, "%lld", (long long)plain);
    free(y->strings[r]);
    y->strings[r] = strdup(known ? l->strings[which] : digits);
    return y->strings[r] != NULL;
}

/* An output of dtype t and the given dims; NULL (err set) when out of memory. */
static xf_tensor *output(xf_dtype t, int ndim, const int64_t *dims, xf_error *err)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *o = xf_tensor_create(t, &s);
    if (!o)
        xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    return o;
}

/* Element i of numeric tensor t set to v. */
static void store(xf_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case XF_DT_FLOAT: ((float *)t->data)[i] = (float)v; break;
    case XF_DT_DOUBLE: ((double *)t->data)[i] = v; break;
    case XF_DT_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    default: ((int64_t *)t->data)[i] = (int64_t)v; break;
    }
}

/* A per-feature list (offset, scale, imputed values): one value, or one
 * per column. */
static xf_status per_feature(const xf_node *n, const char *a, int64_t count, int64_t cols, xf_error *err)
{
    if (count == 1 || count == cols)
        return XF_OK;
    return xf_ml_fail(n, err, XF_ERR_INVALID, "%s has %lld values for rows of %lld features (1 or one per feature)",
                      a, (long long)count, (long long)cols);
}

/* ------------------------------------------------------------ elementwise preprocessing */

/* Scaler (float out: (x - offset) * scale), Normalizer (MAX, L1, L2 per
 * row, as ONNX Runtime: MAX divides by the largest value, L2 keeps the
 * sign of sqrt(x^2 / sum)), Binarizer (1 above threshold, input type),
 * Imputer (replaced_value, or NaN, becomes the imputed value). */
static xf_status run_rowwise(const xf_rt_ml *m, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    const xf_node *n = m->node;
    int64_t rows, cols;
    double *v;
    xf_status st = xf_ml_rows(n, x, &v, &rows, &cols, err);
    if (st != XF_OK)
        return st;
    xf_dtype ot = m->kind == ML_SCALER || m->kind == ML_NORMALIZER ? XF_DT_FLOAT : x->dtype;
    int64_t na = 0, nb = 0;
    const double *a = NULL, *b = NULL;
    const int64_t *ia = NULL;
    double replaced = 0;
    const char *norm = "MAX";
    if (m->kind == ML_SCALER) {
        a = xf_ml_reals(n, "offset", &na);
        b = xf_ml_reals(n, "scale", &nb);
        st = per_feature(n, "offset", na, cols, err);
        if (st == XF_OK)
            st = per_feature(n, "scale", nb, cols, err);
    } else if (m->kind == ML_NORMALIZER) {
        norm = xf_ml_string(n, "norm", "MAX");
        if (strcmp(norm, "MAX") != 0 && strcmp(norm, "L1") != 0 && strcmp(norm, "L2") != 0)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "norm '%s' is none of MAX, L1, L2", norm);
    } else if (m->kind == ML_BINARIZER) {
        a = xf_ml_reals(n, "threshold", &na);
        replaced = na == 1 ? a[0] : 0.0;
        if (!(x->dtype == XF_DT_FLOAT || x->dtype == XF_DT_DOUBLE))
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "X is %s; Binarizer takes float or double",
                            xf_dtype_name(x->dtype));
    } else { /* Imputer */
        bool real = x->dtype == XF_DT_FLOAT || x->dtype == XF_DT_DOUBLE;
        if (real) {
            a = xf_ml_reals(n, "imputed_value_floats", &na);
            const double *r = xf_ml_reals(n, "replaced_value_float", &nb);
            replaced = nb == 1 ? r[0] : 0.0;
        } else {
            ia = xf_ml_ints(n, "imputed_value_int64s", &na);
            const int64_t *r = xf_ml_ints(n, "replaced_value_int64", &nb);
            replaced = nb == 1 ? (double)r[0] : 0.0;
        }
        st = per_feature(n, real ? "imputed_value_floats" : "imputed_value_int64s", na, cols, err);
    }
    xf_tensor *y = st == XF_OK ? output(ot, x->shape.ndim, x->shape.dims, err) : NULL;
    if (st == XF_OK && !y)
        st = XF_ERR_NOMEM;
    for (int64_t r = 0; st == XF_OK && r < rows; r++) {
        const double *row = v + r * cols;
        double div = 0;
        if (m->kind == ML_NORMALIZER) {
            float acc = norm[0] == 'M' ? -3.402823466e38f : 0.0f;
            for (int64_t c = 0; c < cols; c++) {
                float e = (float)row[c];
                acc = norm[0] == 'M' ? (e > acc ? e : acc) : norm[1] == '1' ? acc + fabsf(e) : acc + e * e;
            }
            div = acc;
        }
        for (int64_t c = 0; c < cols; c++) {
            double e = row[c], o = e;
            if (m->kind == ML_SCALER)
                o = ((float)e - (float)a[na == 1 ? 0 : c]) * (float)b[nb == 1 ? 0 : c];
            else if (m->kind == ML_NORMALIZER && div != 0)
                o = norm[1] == '2' ? (e < 0 ? -1.0f : 1.0f) * sqrtf((float)(e * e) / (float)div)
                                   : (float)e / (float)div;
            else if (m->kind == ML_BINARIZER)
                o = e > replaced ? 1.0 : 0.0;
            else if (m->kind == ML_IMPUTER && (e == replaced || (isnan(replaced) && isnan(e))))
                o = a ? a[na == 1 ? 0 : c] : (double)ia[na == 1 ? 0 : c];
            store(y, r * cols + c, o);
        }
    }
    free(v);
    if (st != XF_OK)
        xf_tensor_release(y);
    else
        out[0] = y;
    return st;
}

/* FeatureVectorizer: the rows of the inputs side by side, input k's first
 * inputdimensions[k] features (fewer padded with zeros), as floats; an
 * input of rank 1 is one row. */
static xf_status run_vectorizer(const xf_rt_ml *m, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_node *n = m->node;
    int64_t n_dims, total = 0, rows = -1;
    const int64_t *dims = xf_ml_ints(n, "inputdimensions", &n_dims);
    for (int k = 0; k < n->opaque->n_own_inputs; k++) {
        const xf_tensor *x = in[k];
        int64_t r = x->shape.ndim == 1 ? 1 : x->shape.ndim > 1 ? x->shape.dims[0] : -1;
        if (r < 0 || (!xf_dtype_is_float(x->dtype) && !xf_rt_is_integral(x->dtype)))
            return xf_ml_fail(n, err, XF_ERR_INVALID, "input %d is %s of rank %d; it takes numbers of rank 1 or more",
                              k, xf_dtype_name(x->dtype), x->shape.ndim);
        if (rows >= 0 && r != rows)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "input %d has %lld rows, input 0 %lld", k, (long long)r,
                              (long long)rows);
        rows = r;
        total += dims[k];
    }
    xf_tensor *y = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){2, {rows, total}});
    if (!y)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    float *yv = y->data;
    int64_t at = 0;
    for (int k = 0; k < n->opaque->n_own_inputs; at += dims[k], k++) {
        const xf_tensor *x = in[k];
        int64_t width = rows ? xf_tensor_numel(x) / rows : 0, take = width < dims[k] ? width : dims[k];
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < take; c++)
                yv[r * total + at + c] = (float)xf_rt_load_f64(x->dtype, x->data, r * width + c);
    }
    out[0] = y;
    return XF_OK;
}

/* ArrayFeatureExtractor: X's last axis gathered at indices Y (int64); X of
 * rank 1 gives one row. */
static xf_status run_extract(const xf_rt_ml *m, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_node *n = m->node;
    const xf_tensor *x = in[0], *y = in[1];
    size_t es = xf_dtype_size(x->dtype);
    if (!y || y->dtype != XF_DT_INT64 || x->shape.ndim < 1 || es == 0 || x->dtype == XF_DT_STRING)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes X of rank 1 or more, of a numeric type, and int64 indices Y");
    int64_t k = xf_tensor_numel(y), cols = x->shape.dims[x->shape.ndim - 1];
    int64_t dims[XF_MAX_DIMS];
    int nd = x->shape.ndim == 1 ? 2 : x->shape.ndim;
    if (x->shape.ndim == 1)
        dims[0] = 1;
    else
        memcpy(dims, x->shape.dims, sizeof dims[0] * (size_t)(nd - 1));
    dims[nd - 1] = k;
    for (int64_t i = 0; i < k; i++) {
        int64_t j = ((const int64_t *)y->data)[i];
        if (j < 0 || j >= cols)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "index %lld is outside X's last axis of %lld", (long long)j,
                              (long long)cols);
    }
    xf_tensor *o = output(x->dtype, nd, dims, err);
    if (!o)
        return XF_ERR_NOMEM;
    int64_t rows = cols > 0 ? xf_tensor_numel(x) / cols : xf_shape_numel(&o->shape) / (k > 0 ? k : 1);
    for (int64_t r = 0; r < rows && cols > 0; r++)
        for (int64_t i = 0; i < k; i++)
            memcpy((char *)o->data + (size_t)(r * k + i) * es,
                   (const char *)x->data + (size_t)(r * cols + ((const int64_t *)y->data)[i]) * es, es);
    out[0] = o;
    return XF_OK;
}

/* ------------------------------------------------------------ linear models */

/* LinearRegressor's targets (1 when not given). */
static int64_t n_targets(const xf_node *n)
{
    int64_t nt;
    const int64_t *t = xf_ml_ints(n, "targets", &nt);
    return nt == 1 ? t[0] : 1;
}

/* LinearRegressor (Y [N, targets]) and LinearClassifier (labels [N] and
 * scores [N, classes]): scores X W^T + intercepts.  The classifier's label
 * is the first largest score's, or with one row of coefficients the
 * second label (else 1) where the score is positive and the first (else
 * 0) where not; with one row and two labels its scores are 1 - s and s,
 * as ONNX Runtime writes them. */
static xf_status run_linear(const xf_rt_ml *m, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    const xf_node *n = m->node;
    bool cls = m->kind == ML_LINEAR_CLASSIFIER;
    int64_t rows, cols, nw, nb, nl;
    const double *w = xf_ml_reals(n, "coefficients", &nw), *b = xf_ml_reals(n, "intercepts", &nb);
    xf_ml_labels labels = xf_ml_labels_of(n, "classlabels_ints");
    nl = labels.n;
    double *v;
    xf_status st = xf_ml_rows(n, x, &v, &rows, &cols, err);
    if (st != XF_OK)
        return st;
    int64_t t = cols > 0 ? nw / cols : 0;
    if (t < 1 || t * cols != nw)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld coefficients, not a multiple of the %lld features",
                        (long long)nw, (long long)cols);
    else if (nb != 0 && nb != t)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld intercepts for %lld targets", (long long)nb, (long long)t);
    else if (!cls && n_targets(n) != t)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld coefficients for %lld targets of %lld features",
                        (long long)nw, (long long)n_targets(n), (long long)cols);
    else if (cls && t > 1 && nl != 0 && nl != t)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld class labels for %lld classes", (long long)nl, (long long)t);
    bool second = cls && t == 1 && nl == 2;
    int64_t zc = second ? 2 : t;
    float *s = st == XF_OK ? malloc(sizeof *s * (size_t)(t + 1)) : NULL;
    if (st == XF_OK && !s)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_tensor *z = st == XF_OK ? output(XF_DT_FLOAT, 2, (const int64_t[]){rows, zc}, err) : NULL;
    xf_tensor *y = st == XF_OK && cls ? xf_ml_label_tensor(&labels, rows, err) : NULL;
    if (st == XF_OK && (!z || (cls && !y)))
        st = XF_ERR_NOMEM;
    for (int64_t r = 0; st == XF_OK && r < rows; r++) {
        for (int64_t j = 0; j < t; j++) {
            double acc = nb ? b[j] : 0.0;
            for (int64_t c = 0; c < cols; c++)
                acc += (double)(float)v[r * cols + c] * (double)(float)w[j * cols + c];
            s[j] = (float)acc;
        }
        if (cls) {
            int64_t which = 0;
            if (t == 1) {
                which = s[0] > 0 ? (nl == 2 ? 1 : ML_LABEL_1) : (nl == 2 ? 0 : ML_LABEL_0);
            } else {
                for (int64_t j = 1; j < t; j++)
                    which = s[j] > s[which] ? j : which;
            }
            if (!xf_ml_set_label(y, r, &labels, which))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        xf_ml_write_scores(s, t, m->transform, second ? 1 : -1, (float *)z->data + r * zc);
    }
    free(s);
    free(v);
    if (st != XF_OK) {
        xf_tensor_release(z);
        xf_tensor_release(y);
        return st;
    }
    out[0] = cls ? y : z;
    if (cls)
        out[1] = z;
    return XF_OK;
}

/* ------------------------------------------------------------ plans */

xf_status xf_rt_ml_create(const xf_node *n, size_t max_bytes, xf_rt_ml **out, xf_error *err)
{
    *out = NULL;
    int kind = kind_of(n);
    if (kind < 0)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' is not a host op xflow runs", n->name);
    /* inputs and outputs per kind (the optimizers: of one group) */
    static const int ins[ML_KINDS] = {1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 3, 3, 1, 5, 5, 6};
    static const int outs[ML_KINDS] = {1, 1, 1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 1, 1, 1,
                                       1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 2, 1, 2, 2, 3};
    bool loss = kind == ML_NLL_LOSS || kind == ML_SCE_LOSS; /* their weights may be left out */
    int n_in = n->opaque->n_own_inputs;
    bool optimizer = kind >= ML_ADAGRAD; /* n groups of tensors, checked below */
    bool variadic = (kind == ML_FEATURE_VECTORIZER && n_in >= 1) || optimizer;
    if ((n_in != ins[kind] && !(loss && n_in == 2) && !variadic) || n->n_outputs < 1 ||
        (n->n_outputs > outs[kind] && !optimizer))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "has %d inputs and %d outputs; it takes %d and gives up to %d",
                          n_in, n->n_outputs, ins[kind], outs[kind]);
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] < 0 && !(loss && k == 2))
            return xf_ml_fail(n, err, XF_ERR_INVALID, "input %d is omitted; it is required", k);
    xf_rt_ml *m = calloc(1, sizeof *m);
    if (!m)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    m->kind = (ml_kind)kind;
    m->node = n;
    m->max_bytes = max_bytes;
    xf_status st = xf_ml_transform(n, &m->transform, err);
    int64_t nw;
    if (st == XF_OK && (m->kind == ML_LINEAR_REGRESSOR || m->kind == ML_LINEAR_CLASSIFIER) &&
        !xf_ml_reals(n, "coefficients", &nw))
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has no coefficients");
    if (st == XF_OK && m->kind == ML_LINEAR_REGRESSOR && (n_targets(n) < 1 || nw % n_targets(n)))
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld coefficients for %lld targets", (long long)nw,
                        (long long)n_targets(n));
    if (st == XF_OK && (m->kind == ML_SVM_REGRESSOR || m->kind == ML_SVM_CLASSIFIER))
        st = xf_ml_svm_check(n, m->kind == ML_SVM_CLASSIFIER, err);
    if (st == XF_OK && (m->kind == ML_TREE_REGRESSOR || m->kind == ML_TREE_CLASSIFIER || m->kind == ML_TREE_ENSEMBLE))
        st = xf_ml_trees_create(n, m->kind == ML_TREE_CLASSIFIER, &m->trees, err);
    if (st == XF_OK && loss)
        st = xf_ml_loss_check(n, err);
    int64_t n_dims;
    const int64_t *dims = xf_ml_ints(n, "inputdimensions", &n_dims);
    if (st == XF_OK && optimizer)
        st = xf_ml_optimizer_check(n, kind - ML_ADAGRAD, err);
    if (st == XF_OK && kind == ML_FEATURE_VECTORIZER && n_dims != n_in)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %d inputs and %lld inputdimensions", n_in, (long long)n_dims);
    for (int64_t k = 0; st == XF_OK && kind == ML_FEATURE_VECTORIZER && k < n_dims; k++)
        if (dims[k] < 0)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "inputdimensions[%lld] is negative", (long long)k);
    if (st == XF_OK && m->kind == ML_DICT_VECTORIZER)
        st = xf_ml_dict_create(n, &m->dict, err);
    if (st == XF_OK && m->kind == ML_CAST_MAP)
        st = xf_ml_cast_map_check(n, err);
    if (st == XF_OK && m->kind == ML_TFIDF)
        st = xf_ml_tfidf_create(n, &m->tfidf, err);
    if (st == XF_OK && (m->kind == ML_REGEX_FULL_MATCH || m->kind == ML_TOKENIZER))
        st = xf_ml_regex_create(n, m->kind == ML_TOKENIZER, &m->regex, err);
    if (st == XF_OK && m->kind == ML_IMAGE_DECODER)
        st = xf_image_check(n, err);
    if (st != XF_OK) {
        xf_rt_ml_free(m);
        return st;
    }
    *out = m;
    return XF_OK;
}

xf_status xf_rt_ml_run(const xf_rt_ml *m, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    xf_tensor *res[2] = {NULL, NULL};
    xf_status st;
    if (m->kind >= ML_ADAGRAD) { /* outputs of their own number */
        st = xf_ml_optimizer_run(m->node, m->kind - ML_ADAGRAD, in, out, err);
        for (int k = 0; k < m->node->n_outputs; k++)
            if (m->node->outputs[k] < 0) {
                xf_tensor_release(out[k]);
                out[k] = NULL;
            }
        return st;
    }
    bool maps = m->kind == ML_DICT_VECTORIZER || m->kind == ML_CAST_MAP;
    for (int k = 0; k < m->node->n_inputs && !maps; k++)
        if (in[k] && xf_tensor_is_container(in[k]))
            return xf_ml_fail(m->node, err, XF_ERR_INVALID, "input %d is a%s %s, not a tensor", k,
                              in[k]->is_optional ? "n" : "", xf_kind_name(xf_tensor_kind(in[k])));
    switch (m->kind) {
    case ML_ARRAY_FEATURE_EXTRACTOR: st = run_extract(m, in, res, err); break;
    case ML_ZIP_MAP: st = xf_ml_zip_map(m->node, in[0], res, err); break;
    case ML_DICT_VECTORIZER: st = xf_ml_dict_run(m->dict, in[0], res, err); break;
    case ML_CAST_MAP: st = xf_ml_cast_map_run(m->node, in[0], res, err); break;
    case ML_FEATURE_VECTORIZER: st = run_vectorizer(m, in, res, err); break;
    case ML_LABEL_ENCODER:
    case ML_CATEGORY_MAPPER: st = xf_ml_encode_map(m->node, m->kind == ML_CATEGORY_MAPPER, in[0], res, err); break;
    case ML_ONE_HOT_ENCODER: st = xf_ml_one_hot(m->node, in[0], res, err); break;
    case ML_STRING_CONCAT: st = xf_str_concat(m->node, in[0], in[1], res, err); break;
    case ML_STRING_SPLIT: st = xf_str_split(m->node, in[0], res, err); break;
    case ML_STRING_NORMALIZER: st = xf_str_normalize(m->node, in[0], res, err); break;
    case ML_TFIDF:
        st = xf_ml_tfidf_run(m->tfidf, m->node, in[0], m->max_bytes, res, err);
        break;
    case ML_REGEX_FULL_MATCH:
    case ML_TOKENIZER: st = xf_ml_regex_run(m->regex, m->node, in[0], res, err); break;
    case ML_IMAGE_DECODER: st = xf_image_decode(m->node, m->max_bytes, in[0], res, err); break;
    case ML_NLL_LOSS:
    case ML_SCE_LOSS: st = xf_ml_loss_run(m->node, m->kind == ML_SCE_LOSS, in, res, err); break;
    case ML_LINEAR_REGRESSOR:
    case ML_LINEAR_CLASSIFIER: st = run_linear(m, in[0], res, err); break;
    case ML_TREE_REGRESSOR:
    case ML_TREE_ENSEMBLE:
    case ML_TREE_CLASSIFIER: st = xf_ml_trees_run(m->trees, m->node, in[0], res, err); break;
    case ML_SVM_REGRESSOR:
    case ML_SVM_CLASSIFIER:
        st = xf_ml_svm_run(m->node, m->kind == ML_SVM_CLASSIFIER, m->transform, in[0], res, err);
        break;
    default: st = run_rowwise(m, in[0], res, err); break;
    }
    for (int k = 0; k < 2; k++) {
        if (st == XF_OK && k < m->node->n_outputs && m->node->outputs[k] >= 0)
            out[k] = res[k];
        else
            xf_tensor_release(res[k]);
    }
    return st;
}

void xf_rt_ml_free(xf_rt_ml *m)
{
    if (!m)
        return;
    xf_ml_trees_free(m->trees);
    xf_ml_tfidf_free(m->tfidf);
    xf_ml_regex_free(m->regex);
    xf_ml_dict_free(m->dict);
    free(m);
}
