// Proto comments as OpenAPI descriptions.
import type { AnyDesc, DescFile } from "@bufbuild/protobuf";
import { getComments } from "@bufbuild/protoplugin";

/** The element's leading comment, without linter directives; undefined when there is none. */
export function describe(desc: Exclude<AnyDesc, DescFile>): string | undefined {
  const text = (getComments(desc).leading ?? "")
    .split("\n")
    .map((line) => line.replace(/^ /, "").trimEnd())
    .filter((line) => !line.startsWith("buf:lint:"))
    .join("\n")
    .trim();
  return text === "" ? undefined : text;
}
