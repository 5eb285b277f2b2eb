/** Whether `v` is a traceparent the server takes: `00-<32 hex>-<16 hex>-<2 hex>`, lowercase. */
export declare function isTraceparent(v: unknown): v is string;
/** Returns `v`, or throws InvalidError (field `traceparent`) before anything is sent. */
export declare function checkTraceparent(v: unknown, where?: string): string;
/** The client's hook: the current span's traceparent, or nothing outside a span. */
export type TraceHook = () => string | null | undefined;
