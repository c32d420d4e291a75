// The error body every REST error answers with (title, detail, status, requestId), checked whole.
import { expect } from "vitest";

/** `res` is the error `status`, with the error body whose detail contains `detail` and the request's ID. */
export function expectErrorBody(
  res: { status: number; json: any; headers: Headers },
  status: number,
  detail: string,
): void {
  expect(res.status).toBe(status);
  expect(res.json).toEqual({
    title: expect.any(String),
    detail: expect.any(String),
    status,
    requestId: res.headers.get("x-request-id"),
  });
  expect(res.json.detail).toContain(detail);
}
