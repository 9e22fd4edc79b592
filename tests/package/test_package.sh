#!/usr/bin/env bash
# The Debian package, as a user gets it: built by CPack from this build tree, its control fields and file
# list checked, lintian run on it, then extracted into a temporary root (dpkg -x) and used from there with
# HOME and the XDG folders in a temporary home: the CLI trains the bundled default, the window (offscreen)
# opens on the embedded default and trains, and bash completes from the installed programs. Every file
# either program creates, writes, renames or removes is traced (strace) and must lie in that home.
# Usage: test_package.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
for tool in cpack dpkg-deb lintian strace python3; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/setup.sh test installs it)"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "cpack -G DEB"
# A copy of the package config, so the package this test builds never races another cpack in build/.
(cd "$build" && cpack -G DEB -B "$work/cpack" > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack failed"; }
deb=$(ls "$work"/cpack/tunebench_*_amd64.deb)
echo "$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"

step "control fields"
version=$("$build/bin/tunebench-cli" --version | awk '{print $NF}')
[ "$(dpkg-deb -f "$deb" Package)" = tunebench ] || fail "Package is not tunebench"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version $(dpkg-deb -f "$deb" Version) is not the programs' $version"
[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] || fail "Architecture is not amd64"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# What the programs link (dpkg-shlibdeps) and what the window loads at run time.
for needed in libtorch libqt6widgets6 libqt6gui6 libqcustomplot libyaml-cpp libsentencepiece0 libonig5 libutf8proc \
              libstdc++6 qt6-qpa-plugins; do
  grep -q "$needed" <<< "$depends" || fail "Depends lacks $needed"
done

step "file list"
dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' > "$work/files"
for path in /usr/bin/tunebench /usr/bin/tunebench-cli /usr/lib/x86_64-linux-gnu/tunebench/libtb_sentencepiece.so \
            /usr/share/tunebench/configs/tiny/full_single_device.yaml /usr/share/tunebench/resources/base_model/model.safetensors \
            /usr/share/applications/io.github.tunebench.Tunebench.desktop \
            /usr/share/metainfo/io.github.tunebench.Tunebench.metainfo.xml \
            /usr/share/icons/hicolor/scalable/apps/io.github.tunebench.Tunebench.svg \
            /usr/share/icons/hicolor/48x48/apps/io.github.tunebench.Tunebench.png \
            /usr/share/man/man1/tunebench.1.gz /usr/share/man/man1/tunebench-cli.1.gz \
            /usr/share/bash-completion/completions/tunebench-cli \
            /usr/share/doc/tunebench/copyright /usr/share/doc/tunebench/changelog.gz; do
  grep -qxF "$path" "$work/files" || fail "the package lacks $path"
done
if grep -vE '^/usr/(bin|lib/x86_64-linux-gnu/tunebench|share)(/|$)|^/$|^/usr/?$|^/usr/lib(/x86_64-linux-gnu)?/?$' "$work/files"; then
  fail "files outside bin, lib/<triplet>/tunebench and share (above)"
fi
if grep -E 'CMake|\.o$|\.a$|/build/|_autogen' "$work/files"; then fail "build-tree files in the package (above)"; fi

step "lintian"
lintian --tag-display-limit 0 --allow-root "$deb" > "$work/lintian.log" 2>&1 || true
cat "$work/lintian.log"
if grep -q '^E: ' "$work/lintian.log"; then fail "lintian reports errors"; fi

step "dpkg -x"
root=$work/root
dpkg -x "$deb" "$root"
for bin in tunebench tunebench-cli; do
  if readelf -d "$root/usr/bin/$bin" | grep -E 'RPATH|RUNPATH'; then fail "$bin carries a library search path"; fi
done
zcat "$root/usr/share/man/man1/tunebench-cli.1.gz" | grep -q '^\.SS "export gguf"' || fail "the CLI's man page lacks its verbs"
zcat "$root/usr/share/man/man1/tunebench.1.gz" | grep -q -- 'autostart' || fail "the window's man page lacks its options"

home=$work/home
mkdir -p "$home"
export HOME=$home XDG_DATA_HOME=$home/.local/share XDG_CONFIG_HOME=$home/.config XDG_CACHE_HOME=$home/.cache \
       XDG_RUNTIME_DIR=$home/run TMPDIR=$home/tmp
mkdir -p "$XDG_RUNTIME_DIR" "$TMPDIR" && chmod 700 "$XDG_RUNTIME_DIR"
unset TUNEBENCH_SHARE_DIR TUNEBENCH_SPM_LIB
export PATH=$root/usr/bin:$PATH
cd "$home"

# Every successful call that makes, changes or removes a file, with the folders of relative paths shown.
traced() {
  local log=$1; shift
  strace -f -z -y -qq -o "$log" \
    -e trace=open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat,truncate,chmod,fchmodat \
    "$@"
}

step "tunebench-cli trains the bundled default"
traced "$work/cli.trace" tunebench-cli run full_finetune_single_device --config tiny/full_single_device \
  epochs=1 max_steps_per_epoch=2 > "$work/cli.log" 2>&1 || { cat "$work/cli.log"; fail "the installed CLI's run failed"; }
tail -3 "$work/cli.log"
runs=$XDG_DATA_HOME/tunebench/runs
[ -f "$runs/tiny_full/epoch_0/tunebench_checkpoint.json" ] || { cat "$work/cli.log"; fail "no checkpoint in $runs/tiny_full/epoch_0"; }
grep -q "checkpoint saved: $runs/tiny_full/epoch_0" "$work/cli.log" || fail "the CLI did not say where the run went"

step "the window opens on the embedded default and trains (offscreen)"
exec_line=$(sed -n 's/^Exec=//p' "$root/usr/share/applications/io.github.tunebench.Tunebench.desktop")
[ "$exec_line" = tunebench ] || fail "the desktop entry runs '$exec_line'"
QT_QPA_PLATFORM=offscreen traced "$work/window.trace" timeout 600 $exec_line --autostart --quit-after-steps 1 \
  > "$work/window.log" 2>&1 || { cat "$work/window.log"; fail "the installed window failed"; }
window_run=$(ls -d "$runs"/tiny_full/*-eager-* 2>/dev/null | head -1 || true)
[ -n "$window_run" ] || { ls -R "$runs"; cat "$work/window.log"; fail "the window's run is not under $runs/tiny_full"; }
grep -q '"event":"start"' "$window_run/logs/metrics.jsonl" || fail "the window's run logged no start"
grep -q 'tunebench.models.from_hf_config' "$window_run/logs/metrics.jsonl" || fail "the window did not run the embedded default's model"
[ -f "$XDG_CONFIG_HOME/tunebench/tunebench.conf" ] || fail "the window's settings are not in $XDG_CONFIG_HOME/tunebench"

step "bash completion from the installed programs"
completion=$root/usr/share/bash-completion/completions/tunebench-cli
complete_words() {
  bash -c 'source "$0"; COMP_WORDS=("${@}"); COMP_CWORD=$(( $# - 1 )); _tunebench_cli; printf "%s\n" "${COMPREPLY[@]}"' "$completion" "$@"
}
complete_words tunebench-cli r | grep -qx run || fail "'tunebench-cli r' does not complete to run"
complete_words tunebench-cli run "" | grep -qx lora_finetune_single_device || fail "run does not complete recipes"
complete_words tunebench-cli run full_finetune_single_device --config tiny/f | grep -qx tiny/full_single_device \
  || fail "--config does not complete bundled configs"
complete_words tunebench-cli export gguf --ol | grep -qx -- --ollama || fail "export gguf does not complete its flags"

step "nothing is written outside the temporary home"
python3 - "$home" "$work/cli.trace" "$work/window.trace" <<'EOF'
import re, sys
home = sys.argv[1]
call_re = re.compile(r'^\d+\s+(\w+)\((.*)\)\s+=\s+\d+(?:<([^<>]*)>)?')
allowed = (home + '/', '/dev/', '/proc/', '/sys/')
def absolute(base, path):  # strace -y shows a folder descriptor as N</its/path>; plain paths are from the home
    return path if path.startswith('/') else (base or home) + '/' + path
bad, seen = [], 0
for log in sys.argv[2:]:
    for line in open(log, errors='replace'):
        m = call_re.match(line)
        if not m:
            continue
        call, args, opened = m.groups()
        if call in ('open', 'openat', 'creat'):
            if call != 'creat' and not re.search(r'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC', args):
                continue
            paths = [opened] if opened else [absolute(None, p) for p in re.findall(r'"([^"]*)"', args)[:1]]
        else:
            at = re.findall(r'(?:AT_FDCWD|\d+)(?:<([^<>]*)>)?,\s*"([^"]*)"', args)
            paths = [absolute(b, p) for b, p in at] or [absolute(None, p) for p in re.findall(r'"([^"]*)"', args)]
            if call in ('link', 'linkat', 'symlink', 'symlinkat'):
                paths = paths[-1:]  # the new name; the target is only read
        seen += 1
        for p in paths:
            if not (p + '/').startswith(allowed):
                bad.append(f'{log.rsplit("/", 1)[-1]}: {call}: {p}')
if bad:
    print('\n'.join(sorted(set(bad))))
    sys.exit('FAIL: written outside the temporary home (above)')
if seen == 0:
    sys.exit('FAIL: the trace holds no write at all: strace did not trace the programs')
print(f'{seen} traced writes, every one under the temporary home (or /dev, /proc, /sys)')
EOF
echo "PASS"
