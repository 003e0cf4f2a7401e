/* A block's parameter tensors as the frameworks hold them, which what they do tensor by
 * tensor is counted over: DeepSpeed ZeRO-3's persistence and list collectives (fsdp.c), the
 * kernels and temporaries of a per-tensor gradient accumulation (grad_accumulation: cast_add;
 * dp.c, screen.c). */
#include "core/sim.h"

#include "plan/gen-internal.h"

/* The parameter tensors of a block as Hugging Face's modules hold them, in the order the
 * forward uses them, this rank's tensor-parallel slice of each (DeepSpeed ZeRO-3 manages
 * each tensor on its own): per layer the first norm's weight (and LayerNorm bias), the q,
 * k and v matrices and biases (one of each with model.qkv_fused), q/k norms, the o matrix
 * and bias, the second norm, the gate and up matrices and biases, the down matrix and bias;
 * the final norm in the head; the embedding norm (model.embed_norm) in the embedding, whose
 * tables are not listed. MLA layers' own matrices, LoRA adapters and QLoRA's base matrices
 * are not listed. Calls `each(numel, count, ud)` per run of alike tensors. */
void plan__block_tensors(const gen *g, model_block blk, void (*each)(int64_t, int, void *),
                         void *ud)
{
    const model_spec *m = &g->model;
    int64_t h = m->hidden, t = g->sc->parallel.tp;
    int norm_tensors = m->norm == MODEL_NORM_LAYERNORM ? 2 : 1;
    if (blk == MODEL_BLOCK_HEAD) {
        each(h, norm_tensors, ud);
        return;
    }
    if (blk == MODEL_BLOCK_EMBED && m->embed_norm) /* a LayerNorm whatever model.norm says */
        each(h, 2, ud);
    if (blk != MODEL_BLOCK_LAYER)
        return;
    each(h, norm_tensors, ud);
    if (m->attention.kind == MODEL_ATTN_MLA) {
        each(h, norm_tensors, ud);
        return;
    }
    int64_t heads = m->heads, kvh = m->kv_heads ? m->kv_heads : heads;
    int64_t d = m->head_dim ? m->head_dim : h / heads;
    int64_t q = heads / t * d, kv = (kvh >= t ? kvh / t : 1) * d, f = m->ffn / t;
    int ups = m->activation == MODEL_ACT_SWIGLU ? 2 : 1;
    bool full = g->sh.ft.method == MODEL_FT_FULL;
    /* one projection: its matrix (h x out, trained in full only) and bias */
    int64_t outs[3] = {q + 2 * kv};
    int n_out = 1;
    if (!m->qkv_fused) {
        outs[0] = q;
        outs[1] = outs[2] = kv;
        n_out = 3;
    }
    for (int i = 0; i < n_out; i++) {
        if (full)
            each(h * outs[i], 1, ud);
        if (m->bias)
            each(outs[i], 1, ud);
    }
    if (m->qk_norm)
        each(d, 2, ud);
    if (full)
        each(h * q, 1, ud); /* o */
    if (m->bias)
        each(h, 1, ud); /* o's and down's biases: row-parallel, whole on every TP rank */
    each(h, norm_tensors, ud);
    for (int i = 0; i < ups; i++) {
        if (full)
            each(h * f, 1, ud);
        if (m->bias)
            each(f, 1, ud);
    }
    if (full)
        each(h * f, 1, ud); /* down */
    if (m->bias)
        each(h, 1, ud);
}

static void count_all(int64_t numel, int count, void *ud)
{
    (void)numel;
    *(int *)ud += count;
}

/* The parameter tensors of a block on this rank, as its framework holds them (plan__block_tensors;
 * the embedding's token table and learned position table; the head's final norm and an
 * untied LM head matrix, as unit.trainable counts them). */
int plan__param_tensors(const gen *g, model_block blk)
{
    const model_spec *m = &g->model;
    int n = 0;
    plan__block_tensors(g, blk, count_all, &n);
    if (blk == MODEL_BLOCK_EMBED)
        n += 1 + (m->position == MODEL_POS_LEARNED);
    else if (blk == MODEL_BLOCK_HEAD && !m->tied_embeddings)
        n += 1;
    return n;
}

typedef struct tensor_stats {
    int64_t largest, sum;
} tensor_stats;

static void tensor_stat(int64_t numel, int count, void *ud)
{
    tensor_stats *st = ud;
    st->largest = SIM_MAX(st->largest, numel);
    st->sum += (int64_t)count * numel;
}

/* The elements of unit `u`'s largest parameter tensor on this rank (plan__block_tensors; the
 * embedding's token and position tables and an untied LM head from unit.trainable, less the
 * tensors listed beside them; in a layer, what the list leaves of unit.trainable, experts',
 * MLA's and LoRA's matrices, bounds any tensor it does not list). */
int64_t plan__largest_param_tensor(const gen *g, const unit *u)
{
    const model_spec *m = &g->model;
    tensor_stats st = {0};
    plan__block_tensors(g, u->blk, tensor_stat, &st);
    if (u->blk == MODEL_BLOCK_EMBED) {
        int64_t pos = m->position == MODEL_POS_LEARNED ? (int64_t)m->max_seq_len * m->hidden : 0;
        return SIM_MAX(SIM_MAX(u->trainable - pos - st.sum, pos), st.largest);
    }
    return SIM_MAX(st.largest, u->trainable - st.sum);
}

/* training.grad_accumulation: cast_add's work after a backward of units [u0, u1) (dp.c
 * plan__grad_accum, the screen's chunk times): their trained parameters, each cast from 16
 * bits to fp32 (reads e, writes 4) and added into the fp32 buffer (reads 4 + 4, writes 4),
 * two kernels a tensor, and the cast's fp32 temporary of the largest tensor. */
plan_accum_work plan__grad_accum_work(const gen *g, int u0, int u1)
{
    plan_accum_work w = {0};
    for (int u = u0; u < u1; u++) {
        const unit *x = &g->units[u];
        if (x->trainable == 0)
            continue;
        w.params += (double)x->trainable;
        w.launches += 2 * plan__param_tensors(g, x->blk);
        w.temp_bytes = SIM_MAX(w.temp_bytes, 4 * plan__largest_param_tensor(g, x));
    }
    w.bytes = (g->wbytes + 16) * w.params;
    return w;
}
