#!/usr/bin/env python3
"""A loopback stand-in for the Hugging Face Hub, used by the Hub downloader tests.

It serves a fixed set of repositories, described in a JSON file the tests write,
over the same HTTP protocol the real Hub speaks, so the C++ downloader can be
tested end to end without a network: revision metadata, file resolution, LFS
redirects to a separate "CDN" host, authentication failures, and injected faults
(dropped connections, rate limits, server errors, corrupted blobs).

Usage:
    python3 fake_hub.py --repos REPOS_JSON --port-file PORT_FILE

Two servers listen on 127.0.0.1 at ephemeral ports: the "hub" and the "cdn".
Once both listen, {"hub": <port>, "cdn": <port>} is written to PORT_FILE
(atomically: the tests poll for it). The process serves until SIGTERM/SIGINT.
Only errors are printed (to stderr).

REPOS_JSON:
    {"repos": [
      {"type": "model" | "dataset", "id": "org/name",
       "private": false, "gated": false,
       "commits": {"<40-hex sha>": {"files": {
           "config.json":       {"text": "..."},                  # UTF-8 text
           "model.safetensors": {"file": "/abs/path", "lfs": true},  # read from disk, streamed
           "sub/dir/notes.txt": {"base64": "...", "lfs": false}}}},
       "refs": {"main": "<sha>", "v1.0": "<sha>", "refs/pr/1": "<sha>"}}
    ]}
    A revision is a key of "refs", else a full commit sha that is a key of "commits".
    {"type": ..., "id": "org/old", "renamed_to": "org/new"} is a renamed repo: every request under its
    old name is answered 307 with a relative Location under the new one, as the Hub does.
    ETag of a file: for LFS files the sha256 of its bytes, otherwise its git blob
    sha1 (sha1 of b"blob <len>\\0" + bytes). Hashes are computed on first use.

Hub endpoints (datasets have "datasets/" in front of the repo part, as on the Hub;
the /api/ ones take "models" or "datasets"):
    GET  /api/models/{org}/{name}/revision/{rev}   revision info: id, sha, private, gated,
         siblings [{"rfilename", "size", "blobId", "lfs"?}], lastModified, _id, downloads,
         likes, tags. Query parameters (the clients' repeated expand=) are ignored.
    GET  /api/models/{org}/{name}/tree/{rev}[/{folder}]?recursive=true|false&expand=true|false
         the entries in the folder (the repo's root by default), as a JSON array sorted by
         path, with no pagination: recursive lists every level, files and directories. An
         entry is {"type": "file" | "directory", "path", "oid", "size"}: oid is the git blob
         sha1 of a file (of its pointer file for LFS), the git tree sha1 of a directory,
         whose size is 0; LFS files add "lfs": {"oid": sha256, "size", "pointerSize"};
         expand=true adds "lastCommit" (below). A folder that is not a directory of the
         revision: 404 EntryNotFound.
    POST /api/models/{org}/{name}/paths-info/{rev}  body {"paths": [...], "expand": bool}
         (JSON, or the form encoding huggingface_hub sends): one entry per existing path
         (file or directory, in the order asked, unknown paths left out), shaped as the
         tree's; with expand, each has "lastCommit": {"id": <the revision's commit sha>,
         "title": "commit", "date": "2025-01-01T00:00:00.000Z"}. A bad body: 400.
    HEAD/GET /{org}/{name}/resolve/{rev}/{path}    200 with the bytes (206 for a Range), or
         302 to the cdn (LFS, with X-Linked-Etag and X-Linked-Size); ETag and X-Repo-Commit.
    The revision in resolve and tree URLs may be sent unencoded ("refs/pr/1"): the
    shortest run of segments that names a revision is taken.
    Private repos need "Authorization: Bearer hf_good" (else 401 RepoNotFound);
    gated repos need "hf_accepted" (no token: 401 GatedRepo, another token: 403 GatedRepo).
    Unknown repo/revision/file: 404 RepoNotFound/RevisionNotFound/EntryNotFound.
    Only paths-info takes POST; another method than the endpoint's: 405.

Cdn endpoint:
    GET/HEAD /blob/{sha256}?sig=...   LFS bytes; Range "bytes=N-", "bytes=N-M", "bytes=-N"
                                      (206 with Content-Range); ETag "<sha256>".
    A request with an Authorization header gets 400 (tokens must not cross hosts).

Fault controls and observation (hub port only; these are not logged):
    POST /_control with a JSON object; every key adds faults:
      {"drop_after": {"<sha256 or etag>": N}}   one-shot: the next GET of that blob
            (cdn, or a non-LFS resolve on the hub) sends full-length headers, N body
            bytes, then shuts the socket down.
      {"rate_limit": {"<path prefix>": seconds}} one-shot: the next hub request whose
            path starts with the prefix gets 429 with Retry-After.
      {"server_error": {"<path prefix>": count}} the next `count` requests (either
            port) whose path starts with the prefix get 503.
      {"corrupt": ["<sha256>", ...]}            from now on that blob is served with
            its first byte flipped (xor 0xFF).
    GET  /_log        every request so far on both ports, in order:
                      {"port", "method", "path" (raw, with query), "range", "authorization"}
    POST /_log/clear  empties the log.
"""

import argparse
import base64
import hashlib
import json
import os
import secrets
import signal
import socket
import ssl
import sys
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 1 << 20  # stream bodies in 1 MiB pieces: LFS files may be gigabytes

TOKEN_PRIVATE = "hf_good"
TOKEN_GATED = "hf_accepted"

# What the API says of every commit: the fake has no history.
COMMIT_DATE = "2025-01-01T00:00:00.000Z"
COMMIT_TITLE = "commit"

GATED_MESSAGE = ("Access to {kind} {id} is restricted. You must have access to it "
                 "and be authenticated to access it. Please log in.")


# --------------------------------------------------------------------------- data

class Blob:
    """The bytes of one file, held in memory or read from disk on demand.

    Hashes are computed lazily (a large file costs a full read) and cached; a
    per-blob lock keeps two requests from hashing the same file at once.
    """

    def __init__(self, data=None, path=None):
        self._data = data
        self._path = path
        self.size = len(data) if data is not None else os.path.getsize(path)
        self._lock = threading.Lock()
        self._sha256 = None
        self._git_sha1 = None

    def iter_range(self, start, end):
        """Yield the bytes [start, end) in pieces of at most CHUNK."""
        if self._data is not None:
            view = memoryview(self._data)
            for pos in range(start, end, CHUNK):
                yield bytes(view[pos:min(pos + CHUNK, end)])
            return
        with open(self._path, "rb") as f:
            f.seek(start)
            left = end - start
            while left > 0:
                piece = f.read(min(CHUNK, left))
                if not piece:  # the file shrank under us; send what there is
                    return
                left -= len(piece)
                yield piece

    def _hash(self, h):
        for piece in self.iter_range(0, self.size):
            h.update(piece)
        return h.hexdigest()

    def sha256(self):
        with self._lock:
            if self._sha256 is None:
                self._sha256 = self._hash(hashlib.sha256())
            return self._sha256

    def git_sha1(self):
        with self._lock:
            if self._git_sha1 is None:
                h = hashlib.sha1(b"blob %d\0" % self.size)
                self._git_sha1 = self._hash(h)
            return self._git_sha1


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256, size):
    """The git-lfs pointer file that git stores in place of an LFS file."""
    return ("version https://git-lfs.github.com/spec/v1\n"
            f"oid sha256:{sha256}\nsize {size}\n").encode()


class RepoFile:
    def __init__(self, path, blob, lfs):
        self.path = path
        self.blob = blob
        self.lfs = lfs

    def etag(self):
        return self.blob.sha256() if self.lfs else self.blob.git_sha1()

    def pointer(self):
        """The git-lfs pointer file git holds for an LFS file."""
        return lfs_pointer(self.blob.sha256(), self.blob.size)

    def oid(self):
        """The file's git blob sha1; as in git, an LFS file's is that of its pointer."""
        return git_blob_sha1(self.pointer()) if self.lfs else self.blob.git_sha1()


def commit_tree(files):
    """Every file and directory of a commit as tree API entries, keyed by path.

    `files` maps paths to RepoFile. A directory's oid is its git tree sha1 (mode
    100644 for every file), computed bottom-up, so it changes with its content."""
    entries = {}
    children = {"": []}  # directory -> [(name, is_dir, oid)], filled deepest first
    for path in sorted(files):
        f = files[path]
        entry = {"type": "file", "path": path, "oid": f.oid(), "size": f.blob.size}
        if f.lfs:
            entry["lfs"] = {"oid": f.blob.sha256(), "size": f.blob.size,
                            "pointerSize": len(f.pointer())}
        entries[path] = entry
        parts = path.split("/")
        for depth in range(1, len(parts)):
            children.setdefault("/".join(parts[:depth]), [])
        parent = "/".join(parts[:-1])
        children[parent].append((parts[-1], False, entry["oid"]))
    # Deepest directories first, so each tree's subtrees are hashed before it.
    for folder in sorted(children, key=lambda d: -d.count("/") if d else 1):
        items = sorted(children[folder],
                       key=lambda c: c[0].encode() + (b"/" if c[1] else b""))
        body = b"".join((b"40000 " if is_dir else b"100644 ") + name.encode() + b"\0"
                        + bytes.fromhex(oid) for name, is_dir, oid in items)
        oid = hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
        if folder:
            entries[folder] = {"type": "directory", "path": folder, "oid": oid, "size": 0}
            parts = folder.split("/")
            children["/".join(parts[:-1])].append((parts[-1], True, oid))
    return entries


class Repo:
    def __init__(self, spec, blobs):
        self.type = spec.get("type", "model")
        if self.type not in ("model", "dataset"):
            raise ValueError(f"repo {spec.get('id')!r}: unknown type {self.type!r}")
        self.id = spec["id"]
        self.private = bool(spec.get("private", False))
        self.gated = bool(spec.get("gated", False))
        self.refs = dict(spec.get("refs", {}))
        self.commits = {}
        for sha, commit in spec.get("commits", {}).items():
            files = {}
            for path, fspec in commit.get("files", {}).items():
                files[path] = RepoFile(path, _load_blob(fspec, blobs),
                                       bool(fspec.get("lfs", False)))
            self.commits[sha] = files
        for ref, sha in self.refs.items():
            if sha not in self.commits:
                raise ValueError(f"repo {self.id!r}: ref {ref!r} names unknown commit {sha}")

    def resolve(self, rev):
        """The commit sha a revision names, or None."""
        if rev in self.refs:
            return self.refs[rev]
        if rev in self.commits:
            return rev
        return None


def _load_blob(fspec, blobs):
    """Build a Blob for a file spec, sharing one Blob per identical source so a
    large file named by several commits is hashed once."""
    sources = [k for k in ("text", "base64", "file") if k in fspec]
    if len(sources) != 1:
        raise ValueError(f"a file needs exactly one of text/base64/file: {fspec!r}")
    kind = sources[0]
    key = (kind, fspec[kind])
    if key not in blobs:
        if kind == "text":
            blobs[key] = Blob(data=fspec["text"].encode("utf-8"))
        elif kind == "base64":
            blobs[key] = Blob(data=base64.b64decode(fspec["base64"]))
        else:
            blobs[key] = Blob(path=fspec["file"])
    return blobs[key]


def load_repos(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    blobs = {}
    repos = {}
    for spec in doc.get("repos", []):
        if "renamed_to" in spec:  # a repo renamed on the Hub: its old name redirects (307) to the new one
            repos[(spec.get("type", "model"), spec["id"])] = spec["renamed_to"]
            continue
        repo = Repo(spec, blobs)
        repos[(repo.type, repo.id)] = repo
    return repos


# -------------------------------------------------------------------------- state

class State:
    """Everything the two servers share: repos, the request log and the faults."""

    def __init__(self, repos):
        self.repos = repos
        self.lock = threading.Lock()
        self.log = []
        self.drop_after = {}    # sha256/etag -> bytes of body to send before dropping
        self.rate_limit = {}    # path prefix -> Retry-After seconds (one-shot)
        self.server_error = {}  # path prefix -> remaining 503 responses
        self.corrupt = set()    # sha256/etag served with the first byte flipped
        self.cdn_port = None
        self.scheme = "http"  # https with --tls

    def record(self, port, handler):
        entry = {"port": port, "method": handler.command, "path": handler.path,
                 "range": handler.headers.get("Range"),
                 "authorization": handler.headers.get("Authorization") is not None}
        with self.lock:
            self.log.append(entry)

    def take_status_fault(self, port, path):
        """A (status, retry_after) fault due for this request, consuming it; or None."""
        with self.lock:
            if port == "hub":
                for prefix, seconds in self.rate_limit.items():
                    if path.startswith(prefix):
                        del self.rate_limit[prefix]
                        return 429, seconds
            for prefix, count in self.server_error.items():
                if path.startswith(prefix):
                    if count <= 1:
                        del self.server_error[prefix]
                    else:
                        self.server_error[prefix] = count - 1
                    return 503, None
        return None

    def take_drop_after(self, key):
        with self.lock:
            return self.drop_after.pop(key, None)

    def is_corrupt(self, key):
        with self.lock:
            return key in self.corrupt

    def apply_control(self, doc):
        """Add the faults in a /_control body; raises ValueError on a bad one."""
        if not isinstance(doc, dict):
            raise ValueError("the control body must be a JSON object")
        known = {"drop_after", "rate_limit", "server_error", "corrupt"}
        unknown = set(doc) - known
        if unknown:
            raise ValueError(f"unknown control keys: {sorted(unknown)}")

        def number_map(name, kind):
            value = doc.get(name, {})
            if not isinstance(value, dict) or not all(
                    isinstance(v, kind) and not isinstance(v, bool) and v >= 0
                    for v in value.values()):
                raise ValueError(f"{name} must map strings to non-negative numbers")
            return value

        drops = number_map("drop_after", int)
        limits = number_map("rate_limit", (int, float))
        errors = number_map("server_error", int)
        corrupt = doc.get("corrupt", [])
        if not isinstance(corrupt, list) or not all(isinstance(s, str) for s in corrupt):
            raise ValueError("corrupt must be a list of strings")
        with self.lock:
            self.drop_after.update(drops)
            self.rate_limit.update(limits)
            self.server_error.update({k: v for k, v in errors.items() if v > 0})
            self.corrupt.update(corrupt)

    def find_lfs_blob(self, sha256):
        """The blob of an LFS file whose sha256 is given, or None."""
        seen = set()
        for repo in self.repos.values():
            if isinstance(repo, str):  # a renamed repo's redirect
                continue
            for files in repo.commits.values():
                for f in files.values():
                    if f.lfs and id(f.blob) not in seen:
                        seen.add(id(f.blob))
                        if f.blob.sha256() == sha256:
                            return f.blob
        return None


# ---------------------------------------------------------------------- HTTP base

class HttpError(Exception):
    def __init__(self, status, message, code=None, headers=()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = list(headers)


class RangeNotSatisfiable(Exception):
    pass


def parse_range(header, total):
    """(start, end) with end exclusive for a single byte range, or None to serve
    the whole body (no header, or one we do not understand, as RFC 9110 allows).
    Raises RangeNotSatisfiable for a range starting at or past the end."""
    if not header:
        return None
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if first == "":  # suffix range: the last N bytes
            n = int(last)
            if n <= 0:
                raise RangeNotSatisfiable()
            return max(0, total - n), total
        start = int(first)
        end = int(last) + 1 if last else max(total, start + 1)
    except ValueError:
        return None
    if start < 0 or end <= start:
        return None  # last < first: invalid, so ignored
    if start >= total:
        raise RangeNotSatisfiable()
    return start, min(end, total)


def quiet_errors(server_class):
    """A server class that says nothing when a client hangs up early."""

    class Quiet(server_class):
        daemon_threads = True

        def handle_error(self, request, client_address):
            err = sys.exc_info()[1]
            if isinstance(err, (BrokenPipeError, ConnectionResetError,
                                ConnectionAbortedError, TimeoutError)):
                return
            super().handle_error(request, client_address)

    return Quiet


class Handler(BaseHTTPRequestHandler):
    """Shared plumbing: HTTP/1.1 with a Content-Length on every response, so
    clients can keep connections alive, and byte streaming with faults."""

    protocol_version = "HTTP/1.1"
    port_name = None  # "hub" or "cdn"

    @property
    def state(self):
        return self.server.state

    def log_message(self, format, *args):
        pass  # quiet: the tests read stdout

    def log_error(self, format, *args):
        sys.stderr.write("fake_hub: %s\n" % (format % args))

    def do_GET(self):
        self._dispatch()

    def do_HEAD(self):
        self._dispatch()

    def do_POST(self):
        self._dispatch()

    def _dispatch(self):
        try:
            body = self.request_body = self._read_body()
            target = self.path.split("?", 1)[0]
            if self._control(target, body):
                return
            self.state.record(self.port_name, self)
            if self._pre_checks():
                return
            fault = self.state.take_status_fault(self.port_name, target)
            if fault is not None:
                status, retry_after = fault
                if status == 429:
                    self.send_json(429, {"error": "Too many requests"},
                                   [("Retry-After", _seconds(retry_after))])
                else:
                    self.send_json(503, {"error": "Service unavailable"})
                return
            self.route(target)
        except HttpError as e:
            self.send_error_json(e)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _read_body(self):
        # Always consume a request body so the next request on a kept-alive
        # connection starts where it should.
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True  # cannot tell where the next request starts
            raise HttpError(400, "Bad Content-Length")
        return self.rfile.read(length) if length > 0 else b""

    def _control(self, target, body):
        return False

    def _pre_checks(self):
        return False

    def route(self, target):
        raise HttpError(404, "Not Found")

    # ---- responses

    def send_bytes(self, status, body, headers=(), content_type="application/octet-stream"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def send_json(self, status, obj, headers=()):
        self.send_bytes(status, json.dumps(obj).encode(), headers, "application/json")

    def send_error_json(self, e):
        headers = list(e.headers)
        if e.code:
            headers.append(("X-Error-Code", e.code))
            headers.append(("X-Error-Message", e.message))
        self.send_json(e.status, {"error": e.message}, headers)

    def send_blob(self, blob, headers, fault_key):
        """Send a blob (honouring Range), applying the drop_after and corrupt
        faults registered under fault_key."""
        total = blob.size
        try:
            rng = parse_range(self.headers.get("Range"), total)
        except RangeNotSatisfiable:
            self.send_bytes(416, b"", [("Content-Range", f"bytes */{total}")])
            return
        self.send_response(200 if rng is None else 206)
        start, end = rng if rng is not None else (0, total)
        if rng is not None:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{total}")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command == "HEAD":
            return

        limit = self.state.take_drop_after(fault_key)
        flip = start == 0 and self.state.is_corrupt(fault_key)
        sent = 0
        for piece in blob.iter_range(start, end):
            if flip:
                piece = bytes([piece[0] ^ 0xFF]) + piece[1:]
                flip = False
            if limit is not None and sent + len(piece) >= limit:
                self.wfile.write(piece[:limit - sent])
                break
            self.wfile.write(piece)
            sent += len(piece)
        if limit is not None:
            self._drop_connection()

    def _drop_connection(self):
        """End the connection mid-body, as a failing network would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.connection.close()


def _seconds(value):
    return str(int(value)) if float(value).is_integer() else str(value)


# ----------------------------------------------------------------------------- hub

class HubHandler(Handler):
    port_name = "hub"

    def _control(self, target, body):
        if target == "/_control" and self.command == "POST":
            try:
                self.state.apply_control(json.loads(body or b"{}"))
            except ValueError as e:  # json.JSONDecodeError is a ValueError
                self.send_json(400, {"error": str(e)})
                return True
            self.send_json(200, {})
            return True
        if target == "/_log" and self.command == "GET":
            with self.state.lock:
                log = list(self.state.log)
            self.send_json(200, log)
            return True
        if target == "/_log/clear" and self.command == "POST":
            with self.state.lock:
                self.state.log.clear()
            self.send_json(200, {})
            return True
        return False

    def route(self, target):
        # Split the raw path first: a revision may arrive as refs%2Fpr%2F1 and
        # must stay one segment, while file paths contain real slashes.
        segs = target.lstrip("/").split("/")
        api = len(segs) >= 6 and segs[0] == "api" and segs[1] in ("models", "datasets") \
            and segs[4] in ("revision", "tree", "paths-info")
        post = api and segs[4] == "paths-info"
        if self.command not in (("POST",) if post else ("GET", "HEAD")):
            raise HttpError(405, "Method not allowed")
        if api:
            kind = "model" if segs[1] == "models" else "dataset"
            repo = self._repo(kind, segs[2], segs[3])
            if segs[4] == "revision":
                self._revision_info(repo, urllib.parse.unquote("/".join(segs[5:])))
            elif segs[4] == "tree":
                self._tree(repo, segs[5:])
            else:
                self._paths_info(repo, urllib.parse.unquote("/".join(segs[5:])))
            return
        if len(segs) >= 6 and segs[0] == "datasets" and segs[3] == "resolve":
            self._resolve(self._repo("dataset", segs[1], segs[2]), segs[4:])
            return
        if len(segs) >= 5 and segs[2] == "resolve":
            self._resolve(self._repo("model", segs[0], segs[1]), segs[3:])
            return
        raise HttpError(404, "Not Found")

    def _repo(self, kind, org, name):
        repo_id = urllib.parse.unquote(org) + "/" + urllib.parse.unquote(name)
        repo = self.state.repos.get((kind, repo_id))
        if isinstance(repo, str):  # renamed: the same request under the new name, on this host
            raw_old = "/" + org + "/" + name + "/"
            location = self.path.replace(raw_old, "/" + repo + "/", 1)
            raise HttpError(307, "Moved to " + repo, headers=[("Location", location)])
        if repo is None:
            raise HttpError(404, "Repository not found", "RepoNotFound")
        self._authorize(repo)
        return repo

    def _token(self):
        auth = self.headers.get("Authorization")
        if not auth:
            return None
        scheme, _, token = auth.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""

    def _authorize(self, repo):
        token = self._token()
        if repo.private and token != TOKEN_PRIVATE:
            # The Hub hides private repos: the code says "not found".
            raise HttpError(401, "Invalid username or password.", "RepoNotFound")
        if repo.gated and token != TOKEN_GATED:
            message = GATED_MESSAGE.format(kind=repo.type, id=repo.id)
            raise HttpError(401 if token is None else 403, message, "GatedRepo")

    def _commit(self, repo, rev):
        sha = repo.resolve(rev)
        if sha is None:
            raise HttpError(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        return sha

    def _split_revision(self, repo, rest, min_path):
        """(commit sha, path) for rest = [rev..., path...], the path at least
        min_path segments long. The revision is normally one (encoded) segment;
        an unencoded "refs/pr/1" is accepted too, by trying the shortest run of
        segments that names a known revision."""
        for n in range(1, len(rest) - min_path + 1):
            sha = repo.resolve(urllib.parse.unquote("/".join(rest[:n])))
            if sha is not None:
                return sha, urllib.parse.unquote("/".join(rest[n:]))
        rev = urllib.parse.unquote(rest[0]) if rest else ""
        raise HttpError(404, f"Invalid rev id: {rev}", "RevisionNotFound")

    def _query(self):
        return urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)

    def _revision_info(self, repo, rev):
        sha = self._commit(repo, rev)
        siblings = []
        for path in sorted(repo.commits[sha]):
            f = repo.commits[sha][path]
            entry = {"rfilename": path, "size": f.blob.size, "blobId": f.oid()}
            if f.lfs:
                entry["lfs"] = {"sha256": f.blob.sha256(), "size": f.blob.size,
                                "pointerSize": len(f.pointer())}
            siblings.append(entry)
        # A stable 24-hex database id, as the Hub's "_id" looks.
        object_id = hashlib.sha1(f"{repo.type}/{repo.id}".encode()).hexdigest()[:24]
        self.send_json(200, {"_id": object_id, "id": repo.id, "sha": sha,
                             "private": repo.private,
                             "gated": "auto" if repo.gated else False,
                             "lastModified": COMMIT_DATE, "downloads": 0, "likes": 0,
                             "tags": [], "siblings": siblings})

    @staticmethod
    def _last_commit(sha):
        return {"id": sha, "title": COMMIT_TITLE, "date": COMMIT_DATE}

    def _tree(self, repo, rest):
        sha, folder = self._split_revision(repo, rest, 0)
        folder = folder.strip("/")
        query = self._query()

        def flag(name):
            return any(v.lower() in ("true", "1") for v in query.get(name, []))

        entries = commit_tree(repo.commits[sha])
        if folder and entries.get(folder, {}).get("type") != "directory":
            raise HttpError(404, f"{folder} does not exist on \"{sha}\"", "EntryNotFound",
                            [("X-Repo-Commit", sha)])
        prefix = folder + "/" if folder else ""
        listed = []
        for path in sorted(entries):
            if not path.startswith(prefix):
                continue
            if not flag("recursive") and "/" in path[len(prefix):]:
                continue
            entry = dict(entries[path])
            if flag("expand"):
                entry["lastCommit"] = self._last_commit(sha)
            listed.append(entry)
        self.send_json(200, listed, [("X-Repo-Commit", sha)])

    def _paths_info(self, repo, rev):
        sha = self._commit(repo, rev)
        paths, expand = self._paths_info_body()
        entries = commit_tree(repo.commits[sha])
        found = []
        seen = set()
        for path in paths:
            path = path.strip("/")
            if path in entries and path not in seen:
                seen.add(path)
                entry = dict(entries[path])
                if expand:
                    entry["lastCommit"] = self._last_commit(sha)
                found.append(entry)
        self.send_json(200, found, [("X-Repo-Commit", sha)])

    def _paths_info_body(self):
        """(paths, expand) from a paths-info body: JSON, as @huggingface/hub sends
        it, or a form, as huggingface_hub does (paths repeated, expand=True). A
        body that starts with "{" is JSON whatever its Content-Type says."""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        text = self.request_body.decode("utf-8", "replace")
        if ctype == "application/x-www-form-urlencoded" and not text.lstrip().startswith("{"):
            form = urllib.parse.parse_qs(text)
            paths = form.get("paths", [])
            expand = any(v.lower() in ("true", "1") for v in form.get("expand", []))
            return paths, expand
        try:
            doc = json.loads(text or "{}")
        except ValueError:
            raise HttpError(400, "paths-info expects a JSON body")
        paths = doc.get("paths") if isinstance(doc, dict) else None
        if isinstance(paths, str):
            paths = [paths]
        expand = doc.get("expand", False) if isinstance(doc, dict) else False
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) \
                or not isinstance(expand, bool):
            raise HttpError(400, '"paths" must be a list of strings, "expand" a boolean')
        return paths, expand

    def _resolve(self, repo, rest):
        sha, path = self._split_revision(repo, rest, 1)
        f = repo.commits[sha].get(path)
        if f is None:
            raise HttpError(404, "Entry not found", "EntryNotFound",
                            [("X-Repo-Commit", sha)])
        etag = f.etag()
        headers = [("X-Repo-Commit", sha), ("ETag", f'"{etag}"')]
        if f.lfs:
            location = (f"{self.state.scheme}://127.0.0.1:{self.state.cdn_port}/blob/{etag}"
                        f"?sig={secrets.token_hex(8)}")
            self.send_bytes(302, b"", headers + [
                ("Location", location),
                ("X-Linked-Etag", f'"{etag}"'),
                ("X-Linked-Size", str(f.blob.size))])
            return
        self.send_blob(f.blob, headers, etag)


# ----------------------------------------------------------------------------- cdn

class CdnHandler(Handler):
    port_name = "cdn"

    def _pre_checks(self):
        if self.headers.get("Authorization") is not None:
            # The test asserts this never happens: a token must not follow a
            # redirect to another host.
            self.send_bytes(400, b"authorization header sent to the CDN",
                            content_type="text/plain")
            return True
        return False

    def route(self, target):
        segs = target.lstrip("/").split("/")
        if self.command not in ("GET", "HEAD") or len(segs) != 2 or segs[0] != "blob":
            raise HttpError(404, "Not Found")
        sha = urllib.parse.unquote(segs[1]).lower()
        blob = self.state.find_lfs_blob(sha)
        if blob is None:
            raise HttpError(404, "Blob not found")
        self.send_blob(blob, [("ETag", f'"{sha}"')], sha)


# ---------------------------------------------------------------------------- main

def write_port_file(path, ports):
    """Write the ports atomically: the tests poll until the file exists."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fake_hub-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(ports, f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description="Loopback fake of the Hugging Face Hub.")
    parser.add_argument("--repos", required=True, help="JSON file describing the repos")
    parser.add_argument("--port-file", required=True, help="where to write the ports")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                        help="serve HTTPS on both ports with this certificate and key")
    args = parser.parse_args(argv)

    state = State(load_repos(args.repos))
    hub = quiet_errors(ThreadingHTTPServer)(("127.0.0.1", 0), HubHandler)
    cdn = quiet_errors(ThreadingHTTPServer)(("127.0.0.1", 0), CdnHandler)
    hub.state = cdn.state = state
    state.cdn_port = cdn.server_address[1]
    state.scheme = "http"
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls[0], args.tls[1])
        for s in (hub, cdn):
            s.socket = context.wrap_socket(s.socket, server_side=True)
        state.scheme = "https"

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (hub, cdn)]
    for t in threads:
        t.start()
    write_port_file(args.port_file, {"hub": hub.server_address[1],
                                     "cdn": cdn.server_address[1]})
    # Wake now and then so the signal handlers get to run.
    while not stop.wait(0.5):
        pass
    for s in (hub, cdn):
        s.shutdown()
        s.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
