// The official Hugging Face Hub JavaScript client (@huggingface/hub, pinned in package.json) on a Hub
// cache folder: the independent judge of the cache layout `tunebench-cli download` writes (blobs by
// etag, snapshots/<commit>/ links, refs/) and of what it must read when another client filled it.
//
//   node hub_cache_reference.mjs scan CACHE_DIR
//       scanCacheDir(CACHE_DIR), reduced to
//       {"repos": [{"type", "name", "revisions": [{"commit", "refs": [...], "files": [{"path", "size", "blob"}]}]}],
//        "warnings": ["..."]}
//       path: relative to the snapshot, with "/"; size: the blob's; blob: the blob's file name (the etag).
//       Repos sorted by type then name, revisions by commit, refs and files by name.
//   node hub_cache_reference.mjs snapshot CACHE_DIR HUB_URL REPO_ID [REVISION] [model|dataset]
//       snapshotDownload into CACHE_DIR from HUB_URL; prints {"folder": <the snapshot folder>}.
//   node hub_cache_reference.mjs file CACHE_DIR HUB_URL REPO_ID PATH REVISION [model|dataset]
//       downloadFileToCacheDir; prints {"pointer": <the file's path in the snapshot>}.
// An empty REVISION means the client's default (main); the repo type defaults to model. No token is
// sent (public repos only). One JSON line on stdout; on an error, a message on stderr and exit 1.
import {basename, relative, sep} from "node:path";
import {format} from "node:util";
import {downloadFileToCacheDir, scanCacheDir, snapshotDownload} from "@huggingface/hub";

// The client reports progress through the console (console.debug "Downloading ...", console.info when
// it copies instead of linking): stdout carries only our JSON.
const toStderr = (...args) => process.stderr.write(format(...args) + "\n");
console.log = console.info = console.debug = toStderr;

const USAGE = `usage:
  node hub_cache_reference.mjs scan CACHE_DIR
  node hub_cache_reference.mjs snapshot CACHE_DIR HUB_URL REPO_ID [REVISION] [model|dataset]
  node hub_cache_reference.mjs file CACHE_DIR HUB_URL REPO_ID PATH REVISION [model|dataset]`;

class UsageError extends Error {}

// Code-unit order, the same on every machine (localeCompare depends on the locale).
const compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const byKey = (key) => (a, b) => compare(a[key], b[key]);

function repoType(arg) {
  if (arg === undefined || arg === "") return "model";
  if (arg !== "model" && arg !== "dataset") throw new UsageError(`unknown repo type '${arg}' (model or dataset)`);
  return arg;
}

function hubUrl(arg) {
  if (!/^https?:\/\//.test(arg ?? "")) throw new UsageError(`HUB_URL must be an http(s) URL, got '${arg ?? ""}'`);
  return arg.replace(/\/+$/, "");
}

async function scan(cacheDir) {
  const result = await scanCacheDir(cacheDir);
  const repos = result.repos.map((repo) => ({
    type: repo.id.type,
    name: repo.id.name,
    revisions: repo.revisions
      .map((revision) => ({
        commit: revision.commitOid,
        refs: [...revision.refs].sort(compare),
        files: revision.files
          .map((file) => ({
            path: relative(revision.path, file.path).split(sep).join("/"),
            size: file.blob.size,
            blob: basename(file.blob.path),
          }))
          .sort(byKey("path")),
      }))
      .sort(byKey("commit")),
  }));
  repos.sort((a, b) => compare(a.type, b.type) || compare(a.name, b.name));
  const warnings = result.warnings.map((w) => (w instanceof Error ? w.message : String(w)));
  return {repos, warnings};
}

async function main(argv) {
  const [command, ...args] = argv;
  if (command === "scan" && args.length === 1) return scan(args[0]);
  if (command === "snapshot" && args.length >= 3 && args.length <= 5) {
    const [cacheDir, url, name, revision, type] = args;
    const folder = await snapshotDownload({
      repo: {type: repoType(type), name},
      cacheDir,
      hubUrl: hubUrl(url),
      revision: revision || undefined,
    });
    return {folder};
  }
  if (command === "file" && args.length >= 5 && args.length <= 6) {
    const [cacheDir, url, name, path, revision, type] = args;
    const pointer = await downloadFileToCacheDir({
      repo: {type: repoType(type), name},
      path,
      cacheDir,
      hubUrl: hubUrl(url),
      revision: revision || undefined,
    });
    return {pointer};
  }
  throw new UsageError(USAGE);
}

try {
  const out = await main(process.argv.slice(2));
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (err) {
  const message = err instanceof UsageError ? err.message : `hub_cache_reference: ${err?.message ?? err}`;
  process.stderr.write(message + "\n");
  process.exitCode = 1;
}
