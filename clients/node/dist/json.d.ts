export type JsonValue = null | boolean | number | string | JsonValue[] | {
    [key: string]: JsonValue;
};
export type JsonObject = {
    [key: string]: JsonValue;
};
/**
 * Throws InvalidError (naming `field` and the path inside it) unless `value`
 * is plain JSON: null, booleans, finite numbers, strings, arrays and plain
 * objects, without cycles. Dates, Maps, class instances, BigInts, functions,
 * NaN and undefined in an array are refused rather than silently changed
 * by JSON.stringify. An object property that is undefined is allowed: JSON
 * leaves it out, and reading it back gives undefined again.
 */
export declare function checkJson(value: unknown, field: string, path?: string): asserts value is JsonValue;
