// The part of autocannon's API the load generator uses (the package ships no types).
declare module "autocannon" {
  import type { EventEmitter } from "node:events";
  function autocannon(
    options: Record<string, unknown>,
    done: (err: Error | null, result: { errors: number; timeouts: number }) => void,
  ): EventEmitter;
  export default autocannon;
}
