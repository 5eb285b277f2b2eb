// SPDX-License-Identifier: Apache-2.0
/* The engine's change list into a batch: each change as the rows of its
 * kind (batch.c; steps and events: steps.c). */
#include "internal.h"

void store_batch_changes(store_batch *b, engine_t *e)
{
    store_batch_changes_except(b, e, NULL, NULL);
}

void store_batch_changes_except(store_batch *b, engine_t *e, store_change_filter skip, void *ctx)
{
    size_t n;
    const engine_change *c = engine_changes(e, &n);
    for (size_t i = 0; i < n; i++) {
        if (skip && skip(ctx, &c[i])) continue;
        switch (c[i].kind) {
        case ENGINE_CH_JOB: {
            engine_job_info in;
            engine_job_get(c[i].job, &in);
            store_batch_job(b, &in, c[i].fields);
            if (c[i].fields & ENGINE_JF_NEW)
                for (uint32_t k = 0; k < in.n_parents; k++)
                    store_batch_dep(b, in.id, in.parents[k], k, in.on_parent_failure);
            if ((c[i].fields & ENGINE_JF_NEW) && in.batch)
                store_batch_batch_job(b, in.id, in.batch, in.batch_role);
            break;
        }
        case ENGINE_CH_BATCH: {
            engine_batch_info bi;
            if (engine_batch_get(e, c[i].id, &bi)) store_batch_put_batch(b, &bi);
            break;
        }
        case ENGINE_CH_JOB_DELETED: store_batch_job_delete(b, c[i].id); break;
        case ENGINE_CH_TENANT: {
            engine_tenant_settings ts;
            if (engine_tenant_get(e, 0, c[i].name, &ts, NULL) == 0)
                store_batch_tenant(b, c[i].name, &ts);
            break;
        }
        case ENGINE_CH_QUEUE: {
            engine_queue_settings qs;
            if (engine_queue_get(e, 0, c[i].name, &qs, NULL) == 0)
                store_batch_queue(b, c[i].name, &qs);
            break;
        }
        case ENGINE_CH_IDEM: store_batch_idem(b, c[i].idem); break;
        case ENGINE_CH_PAUSE: store_batch_pause(b, c[i].name, c[i].tenant, c[i].fields != 0); break;
        case ENGINE_CH_ATTEMPT: store_batch_attempt(b, c[i].attempt); break;
        case ENGINE_CH_KEY_SETTING:
            store_batch_key_setting(b, c[i].tenant, c[i].name,
                                    c[i].fields ? c[i].key_settings : NULL);
            break;
        case ENGINE_CH_STEP: store_batch_step(b, c[i].step, c[i].fields != 0); break;
        case ENGINE_CH_EVENT: store_batch_event(b, c[i].event); break;
        case ENGINE_CH_EVENT_GONE: store_batch_event_delete(b, c[i].id); break;
        case ENGINE_CH_WAKE: break;
        }
    }
}
