// Image and file checks of POST /sessions/{id}/messages.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { invalidArgumentMessage as message } from "../../test/support/domain-errors.js";
import { FileAttachmentSchema, ImageAttachmentSchema } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { ATTACHMENT_LIMITS, base64DecodedSize, checkAttachments, checkImage, sniffImageType } from "./attachments.js";

// A real 1×1 PNG.
const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const image = (data: string) => create(ImageAttachmentSchema, { data });
const file = (init: { data?: string; parsedData?: string; name?: string; path?: string }) =>
  create(FileAttachmentSchema, init);

describe("checkImage", () => {
  it("accepts real images, plain or as a data URL, and reports the type from the bytes", () => {
    expect(checkImage("images[0].data", PNG_1X1)).toMatchObject({
      mediaType: "image/png",
      size: Buffer.from(PNG_1X1, "base64").length,
      data: PNG_1X1,
    });
    expect(checkImage("x", `data:image/png;base64,${PNG_1X1}`)).toMatchObject({
      mediaType: "image/png",
      data: PNG_1X1,
    });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]).toString("base64");
    expect(checkImage("x", jpeg).mediaType).toBe("image/jpeg");
    const gif = Buffer.from("GIF89a\x01\x00\x01\x00", "latin1").toString("base64");
    expect(checkImage("x", gif).mediaType).toBe("image/gif");
    const webp = Buffer.concat([Buffer.from("RIFF"), Buffer.from([1, 0, 0, 0]), Buffer.from("WEBPVP8 ")]).toString(
      "base64",
    );
    expect(checkImage("x", webp).mediaType).toBe("image/webp");
  });

  it("rejects what does not decode, naming the field", () => {
    expect(message(() => checkImage("images[2].data", "not base64!"))).toMatch(
      /^images\[2\]\.data: is not valid base64/,
    );
    expect(message(() => checkImage("images[0].data", "abcde"))).toMatch(/^images\[0\]\.data: is not valid base64/);
    expect(message(() => checkImage("images[0].data", "ab=c"))).toMatch(/is not valid base64/);
    expect(message(() => checkImage("images[0].data", `${PNG_1X1.slice(0, 20)}\n${PNG_1X1.slice(20)}`))).toMatch(
      /is not valid base64/,
    );
    expect(message(() => checkImage("images[0].data", ""))).toMatch(
      /^images\[0\]\.data: must be a base64-encoded image/,
    );
  });

  it("rejects bytes that are not an image, and a data URL that lies about its type", () => {
    expect(message(() => checkImage("images[0].data", Buffer.from("hello world").toString("base64")))).toBe(
      "images[0].data: is not a PNG, JPEG, GIF or WebP image",
    );
    expect(message(() => checkImage("images[0].data", `data:image/jpeg;base64,${PNG_1X1}`))).toBe(
      "images[0].data: declares image/jpeg but holds image/png",
    );
  });

  it("enforces 5 MiB decoded per image without decoding an oversize one", () => {
    const justOver = "A".repeat(Math.ceil(((ATTACHMENT_LIMITS.imageBytes + 1) * 4) / 3 / 4) * 4);
    expect(base64DecodedSize(justOver)).toBeGreaterThan(ATTACHMENT_LIMITS.imageBytes);
    expect(message(() => checkImage("images[0].data", justOver))).toMatch(
      /^images\[0\]\.data: image is \d+ bytes decoded; the limit is 5242880 bytes/,
    );
  });

  it("sniffs nothing from too few bytes", () => {
    expect(sniffImageType(new Uint8Array([0x89, 0x50]))).toBeUndefined();
  });
});

describe("checkAttachments", () => {
  it("checks counts, files and the total", () => {
    expect(
      checkAttachments([image(PNG_1X1)], [file({ data: "hello", name: "a.txt", path: "docs/a.txt" })]).files,
    ).toEqual([{ data: "hello", parsedData: "", name: "a.txt", path: "docs/a.txt", size: 5 }]);
    expect(
      message(() =>
        checkAttachments(
          Array.from({ length: 21 }, () => image(PNG_1X1)),
          [],
        ),
      ),
    ).toBe("images: must have at most 20 items, got 21");
    expect(message(() => checkAttachments([], [file({ name: "empty.pdf" })]))).toBe(
      "files[0]: needs data or parsedData",
    );
    const big = "x".repeat(ATTACHMENT_LIMITS.totalBytes / 2 + 1);
    expect(message(() => checkAttachments([], [file({ data: big }), file({ parsedData: big })]))).toMatch(
      /together are \d+ bytes; the limit is 20971520 bytes/,
    );
  });
});
