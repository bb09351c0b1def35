/* ONNX-ML's SVMRegressor and SVMClassifier, as ONNX Runtime evaluates
 * them (libsvm's forms, which skl2onnx writes for SVC, NuSVC, SVR, NuSVR
 * and OneClassSVM): kernels LINEAR, POLY ((gamma x.v + coef0)^degree), RBF
 * (exp(-gamma |x - v|^2)) and SIGMOID (tanh(gamma x.v + coef0)) in float;
 * a classifier with support vectors compares every pair of classes (one
 * decision value each, a vote to the first class of the pair where it is
 * positive, else to the second), labels by the most votes, and with
 * prob_a and prob_b turns the decision values into class probabilities
 * (Platt's sigmoid per pair, then the pairwise coupling libsvm iterates);
 * without support vectors it is linear (one row of coefficients per
 * class, rho[0] added).  A regressor adds its coefficients' kernel sum and
 * rho[0] (one_class: the sign as 1 or -1). */
#include "ml_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_LINEAR, K_POLY, K_RBF, K_SIGMOID };

typedef struct svm {
    int kernel;
    float gamma, coef0, degree;
    int64_t n_vectors, n_features, n_classes;
    const double *vectors, *coef, *rho, *prob_a, *prob_b;
    int64_t n_coef, n_rho, n_prob;
    const int64_t *per_class;
    xf_ml_labels labels;
    int64_t n_per_class;
} svm;

/* Reads and checks n's attributes (classifier: the pairwise layout). */
static xf_status read_svm(const xf_node *n, bool classifier, svm *m, xf_error *err)
{
    memset(m, 0, sizeof *m);
    static const char *const kernels[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    const char *k = xf_ml_string(n, "kernel_type", "LINEAR");
    while (m->kernel < 4 && strcmp(k, kernels[m->kernel]) != 0)
        m->kernel++;
    if (m->kernel == 4)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "kernel_type '%s' is none of LINEAR, POLY, RBF, SIGMOID", k);
    int64_t np, nv, nb;
    const double *params = xf_ml_reals(n, "kernel_params", &np);
    if (np != 0 && np != 3)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "kernel_params has %lld values; it takes gamma, coef0, degree",
                          (long long)np);
    if (np == 3)
        m->gamma = (float)params[0], m->coef0 = (float)params[1], m->degree = (float)params[2];
    m->vectors = xf_ml_reals(n, "support_vectors", &nv);
    m->coef = xf_ml_reals(n, "coefficients", &m->n_coef);
    m->rho = xf_ml_reals(n, "rho", &m->n_rho);
    m->prob_a = xf_ml_reals(n, "prob_a", &m->n_prob);
    m->prob_b = xf_ml_reals(n, "prob_b", &nb);
    if (m->n_coef < 1 || m->n_rho < 1)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs coefficients and rho");
    if (classifier) {
        m->labels = xf_ml_labels_of(n, "classlabels_ints");
        m->n_classes = m->labels.n;
        m->per_class = xf_ml_ints(n, "vectors_per_class", &m->n_per_class);
        for (int64_t c = 0; c < m->n_per_class; c++) {
            if (m->per_class[c] < 0 || m->per_class[c] > nv)
                return xf_ml_fail(n, err, XF_ERR_INVALID, "vectors_per_class[%lld] is %lld", (long long)c,
                                  (long long)m->per_class[c]);
            m->n_vectors += m->per_class[c];
        }
        if (m->n_vectors > nv || m->n_classes > 65536) /* (pairs of classes and their k x k coupling are made) */
            return xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld support vectors for %lld values, or %lld classes "
                              "(at most 65536)", (long long)m->n_vectors, (long long)nv, (long long)m->n_classes);
        if (m->n_classes < 1)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "has no class labels");
    } else {
        const int64_t *s = xf_ml_ints(n, "n_supports", &np);
        m->n_vectors = np == 1 && s[0] > 0 ? s[0] : 0;
    }
    int64_t pairs = m->n_classes * (m->n_classes - 1) / 2;
    if (m->n_vectors == 0) { /* linear: a row of coefficients per class (one for a regressor) */
        m->kernel = K_LINEAR;
        int64_t rows = classifier ? m->n_classes : 1;
        m->n_features = m->n_coef / rows;
        if (m->n_features * rows != m->n_coef)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld coefficients for %lld classes", (long long)m->n_coef,
                              (long long)rows);
        return XF_OK;
    }
    m->n_features = nv / m->n_vectors;
    if (m->n_features * m->n_vectors != nv)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld support vector values for %lld vectors", (long long)nv,
                          (long long)m->n_vectors);
    if (!classifier)
        return m->n_coef == m->n_vectors ? XF_OK
                                         : xf_ml_fail(n, err, XF_ERR_INVALID, "has %lld coefficients for %lld "
                                                      "support vectors", (long long)m->n_coef, (long long)m->n_vectors);
    if (m->n_per_class != m->n_classes || m->n_coef != (m->n_classes - 1) * m->n_vectors || m->n_rho < pairs ||
        m->n_prob != nb || (m->n_prob && m->n_prob < pairs) || m->n_classes < 2)
        return xf_ml_fail(n, err, XF_ERR_INVALID,
                          "its %lld classes take vectors_per_class for each, (classes - 1) x %lld coefficients, "
                          "%lld rho and as many prob_a and prob_b or none", (long long)m->n_classes,
                          (long long)m->n_vectors, (long long)pairs);
    return XF_OK;
}

/* The kernel of row x (n features, as float) with vector v. */
static float kernel(const svm *m, const float *x, const double *v)
{
    if (m->kernel == K_RBF) {
        float sum = 0;
        for (int64_t f = 0; f < m->n_features; f++) {
            float d = x[f] - (float)v[f];
            sum += d * d;
        }
        return expf(-m->gamma * sum);
    }
    double dot = 0;
    for (int64_t f = 0; f < m->n_features; f++)
        dot += (double)x[f] * (double)(float)v[f];
    if (m->kernel == K_LINEAR)
        return (float)dot;
    float a = m->gamma * (float)dot + m->coef0;
    if (m->kernel == K_SIGMOID)
        return tanhf(a);
    return m->degree == 2 ? a * a : m->degree == 3 ? a * a * a : powf(a, m->degree);
}

/* libsvm's pairwise coupling (Wu, Lin and Weng's second method), in
 * float as ONNX Runtime computes it: r holds the pairwise probabilities
 * (r[i k + j] that i beats j), p receives the k class probabilities. */
static void couple(int64_t k, const float *r, float *p, float *q, float *qp)
{
    for (int64_t i = 0; i < k; i++) {
        p[i] = 1.0f / (float)k;
        q[i * k + i] = 0;
        for (int64_t j = 0; j < i; j++) {
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = q[j * k + i];
        }
        for (int64_t j = i + 1; j < k; j++) {
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = -r[j * k + i] * r[i * k + j];
        }
    }
    float eps = 0.005f / (float)k;
    for (int loop = 0; loop < 100; loop++) {
        float pqp = 0, worst = 0;
        for (int64_t i = 0; i < k; i++) {
            qp[i] = 0;
            for (int64_t j = 0; j < k; j++)
                qp[i] += q[i * k + j] * p[j];
            pqp += p[i] * qp[i];
        }
        for (int64_t i = 0; i < k; i++) {
            float e = fabsf(qp[i] - pqp);
            worst = e > worst ? e : worst;
        }
        if (worst < eps)
            break;
        for (int64_t i = 0; i < k; i++) {
            float diff = (-qp[i] + pqp) / q[i * k + i];
            p[i] += diff;
            pqp = (pqp + diff * (diff * q[i * k + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
            for (int64_t j = 0; j < k; j++) {
                qp[j] = (qp[j] + diff * q[i * k + j]) / (1 + diff);
                p[j] /= 1 + diff;
            }
        }
    }
}

static float logistic(float v)
{
    float e = 1.0f / (1.0f + expf(-fabsf(v)));
    return v < 0 ? 1.0f - e : e;
}

xf_status xf_ml_svm_check(const xf_node *n, bool classifier, xf_error *err)
{
    svm m;
    return read_svm(n, classifier, &m, err);
}

/* One row of a classifier: which label it gives (xf_ml_set_label), and its
 * scores in z. */
static int64_t classify(const svm *m, int transform, const float *x, float *kern, float *dec, int64_t *votes, float *z,
                        float *work)
{
    int64_t k = m->n_classes, pairs = k * (k - 1) / 2;
    bool all_positive = true;
    for (int64_t i = 0; i < m->n_coef; i++)
        all_positive &= (float)m->coef[i] >= 0;
    int64_t best = 0;
    float max_weight = 0;
    if (m->n_vectors == 0) { /* linear */
        for (int64_t c = 0; c < k; c++) {
            double dot = 0;
            for (int64_t f = 0; f < m->n_features; f++)
                dot += (double)x[f] * (double)(float)m->coef[c * m->n_features + f];
            z[c] = (float)dot + (float)m->rho[0];
            best = z[c] > z[best] ? c : best;
        }
        max_weight = z[best];
    } else {
        for (int64_t v = 0; v < m->n_vectors; v++)
            kern[v] = kernel(m, x, m->vectors + v * m->n_features);
        memset(votes, 0, sizeof *votes * (size_t)k);
        int64_t start_i = 0, pair = 0;
        for (int64_t i = 0; i + 1 < k; start_i += m->per_class[i], i++) {
            int64_t start_j = start_i + m->per_class[i];
            for (int64_t j = i + 1; j < k; start_j += m->per_class[j], j++) {
                double sum = 0;
                for (int64_t v = 0; v < m->per_class[i]; v++)
                    sum += (double)((float)m->coef[(j - 1) * m->n_vectors + start_i + v] * kern[start_i + v]);
                for (int64_t v = 0; v < m->per_class[j]; v++)
                    sum += (double)((float)m->coef[i * m->n_vectors + start_j + v] * kern[start_j + v]);
                sum += (float)m->rho[pair];
                dec[pair++] = (float)sum;
                votes[sum > 0 ? i : j]++;
            }
        }
        for (int64_t c = 1; c < k; c++)
            best = votes[c] > votes[best] ? c : best;
        if (m->n_prob) {
            float *r = work, *q = work + k * k, *qp = work + 2 * k * k;
            memset(r, 0, sizeof *r * (size_t)(k * k));
            for (int64_t i = 0, idx = 0; i + 1 < k; i++)
                for (int64_t j = i + 1; j < k; j++, idx++) {
                    float p = 1.0f - logistic(dec[idx] * (float)m->prob_a[idx] + (float)m->prob_b[idx]);
                    p = fminf(fmaxf(p, 1e-7f), 1 - 1e-7f);
                    r[i * k + j] = p;
                    r[j * k + i] = 1 - p;
                }
            couple(k, r, z, q, qp);
        } else {
            memcpy(z, dec, sizeof *z * (size_t)pairs);
        }
    }
    /* two classes without probabilities: the second where the largest
     * linear score passes 0.5 (0 where a coefficient is negative) */
    bool second = k == 2 && m->n_prob == 0 &&
                  ((all_positive && max_weight >= 0.5f) || (!all_positive && max_weight > 0));
    int64_t label = second ? 1 : best;
    /* scores: the transform, or the one decision value of two classes as
     * -s and s (NONE), else 1 - s and s */
    int64_t count = m->n_vectors && !m->n_prob ? pairs : k;
    int add_second = m->n_vectors && !m->n_prob && k == 2 ? (transform == ML_NONE ? 2 : 0) : -1;
    float s[2];
    if (count == 1) {
        s[0] = z[0];
        xf_ml_write_scores(s, 1, transform, add_second, z);
    } else {
        xf_ml_write_scores(z, count, transform, -1, z);
    }
    return label;
}

xf_status xf_ml_svm_run(const xf_node *n, bool classifier, int transform, const xf_tensor *x, xf_tensor **out,
                        xf_error *err)
{
    svm m;
    int64_t rows, cols;
    double *v = NULL;
    xf_status st = read_svm(n, classifier, &m, err);
    if (st == XF_OK)
        st = xf_ml_rows(n, x, &v, &rows, &cols, err);
    if (st == XF_OK && cols != m.n_features)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "X has rows of %lld features; it takes %lld", (long long)cols,
                        (long long)m.n_features);
    if (st != XF_OK) {
        free(v);
        return st;
    }
    int64_t k = m.n_classes, pairs = k * (k - 1) / 2;
    int64_t width = !classifier ? 1 : m.n_vectors && !m.n_prob ? (k > 2 ? pairs : 2) : k;
    xf_shape zs = xf_shape_make(2, (const int64_t[]){rows, width});
    xf_tensor *z = xf_tensor_create(XF_DT_FLOAT, &zs);
    xf_tensor *y = classifier ? xf_ml_label_tensor(&m.labels, rows, err) : NULL;
    int64_t nk = k > 2 ? k : 2;
    float *xf = malloc(sizeof *xf * (size_t)(cols + 1)), *kern = malloc(sizeof *kern * (size_t)(m.n_vectors + 1));
    float *dec = malloc(sizeof *dec * (size_t)(pairs + 1)), *work = malloc(sizeof *work * (size_t)(3 * nk * nk));
    int64_t *votes = malloc(sizeof *votes * (size_t)(k + 1));
    if (!z || (classifier && !y) || !xf || !kern || !dec || !work || !votes)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; st == XF_OK && r < rows; r++) {
        for (int64_t c = 0; c < cols; c++)
            xf[c] = (float)v[r * cols + c];
        float *zr = (float *)z->data + r * width;
        if (classifier) {
            if (!xf_ml_set_label(y, r, &m.labels, classify(&m, transform, xf, kern, dec, votes, zr, work)))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            continue;
        }
        double sum = 0;
        if (m.n_vectors == 0)
            sum = kernel(&m, xf, m.coef);
        else
            for (int64_t j = 0; j < m.n_vectors; j++)
                sum += (double)((float)m.coef[j] * kernel(&m, xf, m.vectors + j * m.n_features));
        zr[0] = (float)sum + (float)m.rho[0];
    }
    free(v);
    free(xf);
    free(kern);
    free(dec);
    free(work);
    free(votes);
    if (st != XF_OK) {
        xf_tensor_release(z);
        xf_tensor_release(y);
        return st;
    }
    if (!classifier) {
        int64_t no;
        const int64_t *one = xf_ml_ints(n, "one_class", &no);
        for (int64_t r = 0; no == 1 && one[0] != 0 && r < rows; r++)
            ((float *)z->data)[r] = ((float *)z->data)[r] > 0 ? 1.0f : -1.0f;
    }
    out[0] = classifier ? y : z;
    if (classifier)
        out[1] = z;
    return XF_OK;
}
