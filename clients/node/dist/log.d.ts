/** The worker's log: one line per event on stderr, as `tenq work` writes it. */
export interface Logger {
    info(message: string): void;
    warn(message: string): void;
    error(message: string): void;
}
/** Lines on stderr: `2026-01-02T03:04:05.678Z warn <message>`. */
export declare const stderrLogger: Logger;
/** Says nothing. */
export declare const silentLogger: Logger;
