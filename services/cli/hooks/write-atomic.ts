// Replaces a file atomically: the new bytes go to a temporary file in the same directory, are
// flushed, and are renamed over the target, so a crash leaves either the old file or the new
// one, never half of either. A symlinked settings file is written through to its target, and the
// file keeps its permissions.
import { randomBytes } from "node:crypto";
import { open, mkdir, realpath, rename, stat, unlink } from "node:fs/promises";
import { dirname, join, basename } from "node:path";

async function resolveTarget(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch {
    return file;
  }
}

export async function writeFileAtomic(file: string, text: string): Promise<void> {
  const target = await resolveTarget(file);
  await mkdir(dirname(target), { recursive: true });
  let mode = 0o644;
  try {
    mode = (await stat(target)).mode & 0o7777;
  } catch {
    // A new file.
  }
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const handle = await open(temp, "wx", mode);
  try {
    // open()'s mode is filtered by the umask; the file keeps exactly the old permissions.
    await handle.chmod(mode);
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, target);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}
