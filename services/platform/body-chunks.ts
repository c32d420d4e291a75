// The size google.api.HttpBody answers are cut into, whoever streams them (the analytics answers
// and exports, the web module's files): small enough that a stream starts flowing at once and that
// no message nears a gRPC client's 4 MiB default limit, large enough that framing costs nothing.
export const HTTP_BODY_CHUNK_BYTES = 64 * 1024;
