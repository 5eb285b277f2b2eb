export declare class RequestKeys {
    private readonly random;
    private counter;
    /** A fresh key, never made before by this maker. */
    next(): string;
}
