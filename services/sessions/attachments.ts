// Checks the images and files of POST /sessions/{id}/messages before anything is stored.
//
// Limits (documented in sessions.proto): at most 20 images, each a real PNG, JPEG, GIF or WebP
// image of at most 5 MiB once decoded; at most 20 files; images and files together at most
// 20 MiB (decoded image bytes plus the characters of each file's data and parsedData).
// 5 MiB per image is what the large model APIs accept for one image, so a stored image can be
// handed to any of them as it is.
import type { FileAttachment, ImageAttachment } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { invalidArgument } from "../platform/errors.js";

export const MiB = 1024 * 1024;
export const ATTACHMENT_LIMITS = {
  images: 20,
  imageBytes: 5 * MiB,
  files: 20,
  totalBytes: 20 * MiB,
  fileNameChars: 255,
  filePathChars: 4096,
} as const;

export interface CheckedImage {
  /** Base64 as sent, without a data-URL prefix. */
  data: string;
  mediaType: string;
  size: number;
}

export interface CheckedFile {
  data: string;
  parsedData: string;
  name: string;
  path: string;
  size: number;
}

// Standard base64 (RFC 4648 §4), padding optional; no whitespace.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([a-z]+\/[a-z0-9.+-]+);base64,/i;

/** The image type from the first bytes, or undefined when it is none of the accepted four. */
export function sniffImageType(bytes: Uint8Array): string | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61)
    return "image/gif";
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    bytes[8] === 0x57 &&
    bytes[9] === 0x45 &&
    bytes[10] === 0x42 &&
    bytes[11] === 0x50
  )
    return "image/webp";
  return undefined;
}

/** Decoded size of a well-formed base64 string, without decoding it. */
export function base64DecodedSize(b64: string): number {
  const padding = b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0;
  const unpadded = b64.length - padding;
  return Math.floor((unpadded * 3) / 4);
}

export function checkImage(path: string, raw: string): CheckedImage {
  let b64 = raw;
  let declared: string | undefined;
  const prefix = DATA_URL.exec(raw);
  if (prefix) {
    declared = prefix[1]!.toLowerCase();
    b64 = raw.slice(prefix[0].length);
  }
  if (b64.length === 0) throw invalidArgument(path, "must be a base64-encoded image, got an empty string");
  // A length of 4n+1 cannot come from any byte string.
  if (!BASE64.test(b64) || b64.length % 4 === 1 || (b64.includes("=") && b64.length % 4 !== 0)) {
    throw invalidArgument(
      path,
      "is not valid base64 (RFC 4648 alphabet A-Z a-z 0-9 + /, optional = padding, no whitespace)",
    );
  }
  const size = base64DecodedSize(b64);
  if (size > ATTACHMENT_LIMITS.imageBytes) {
    throw invalidArgument(
      path,
      `image is ${size} bytes decoded; the limit is ${ATTACHMENT_LIMITS.imageBytes} bytes (5 MiB)`,
    );
  }
  const bytes = Buffer.from(b64, "base64");
  // Node's decoder skips what it cannot read; a round trip proves every character was data.
  if (bytes.length !== size || bytes.toString("base64").replace(/=+$/, "") !== b64.replace(/=+$/, "")) {
    throw invalidArgument(path, "is not valid base64");
  }
  const mediaType = sniffImageType(bytes);
  if (!mediaType) throw invalidArgument(path, "is not a PNG, JPEG, GIF or WebP image");
  if (declared !== undefined && declared !== mediaType) {
    throw invalidArgument(path, `declares ${declared} but holds ${mediaType}`);
  }
  return { data: b64, mediaType, size };
}

function checkFile(path: string, file: FileAttachment): CheckedFile {
  if (file.data === "" && file.parsedData === "") throw invalidArgument(path, "needs data or parsedData");
  if (file.name.length > ATTACHMENT_LIMITS.fileNameChars) {
    throw invalidArgument(`${path}.name`, `must be at most ${ATTACHMENT_LIMITS.fileNameChars} characters`);
  }
  if (file.path.length > ATTACHMENT_LIMITS.filePathChars) {
    throw invalidArgument(`${path}.path`, `must be at most ${ATTACHMENT_LIMITS.filePathChars} characters`);
  }
  return {
    data: file.data,
    parsedData: file.parsedData,
    name: file.name,
    path: file.path,
    size: file.data.length + file.parsedData.length,
  };
}

export function checkAttachments(
  images: readonly ImageAttachment[],
  files: readonly FileAttachment[],
): { images: CheckedImage[]; files: CheckedFile[] } {
  if (images.length > ATTACHMENT_LIMITS.images)
    throw invalidArgument("images", `must have at most ${ATTACHMENT_LIMITS.images} items, got ${images.length}`);
  if (files.length > ATTACHMENT_LIMITS.files)
    throw invalidArgument("files", `must have at most ${ATTACHMENT_LIMITS.files} items, got ${files.length}`);
  const checkedImages = images.map((img, i) => checkImage(`images[${i}].data`, img.data));
  const checkedFiles = files.map((f, i) => checkFile(`files[${i}]`, f));
  const total = [...checkedImages, ...checkedFiles].reduce((sum, a) => sum + a.size, 0);
  if (total > ATTACHMENT_LIMITS.totalBytes) {
    throw invalidArgument(
      "images",
      `images and files together are ${total} bytes; the limit is ${ATTACHMENT_LIMITS.totalBytes} bytes (20 MiB)`,
    );
  }
  return { images: checkedImages, files: checkedFiles };
}
