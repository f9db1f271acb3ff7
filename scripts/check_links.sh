#!/bin/sh
# check_links.sh — every relative link between the project's Markdown files
# ([text](path) and [text](path#anchor)) names a file that exists, and an
# anchor names a heading of that file (GitHub's slugs: lower case, spaces to
# dashes, punctuation but - and _ dropped). Prints each broken link as
# FILE: LINK and exits 1 if there is any.
set -eu
cd "$(dirname "$0")/.."
python3 - <<'PY'
import os, re, subprocess, sys
files = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '*.md'],
                       capture_output=True, text=True, check=True).stdout.split()
files = [f for f in files if not f.startswith('bench/out/') and os.path.exists(f)]
def slugs(path):
    out, fence = set(), False
    for line in open(path, encoding='utf-8'):
        if line.lstrip().startswith('```'):
            fence = not fence
        if not fence and line.startswith('#'):
            t = line.lstrip('#').strip().lower()
            t = re.sub(r'[^\w\- ]', '', t).replace(' ', '-')
            out.add(t)
    return out
bad = 0
for f in files:
    text = re.sub(r'```.*?```', '', open(f, encoding='utf-8').read(), flags=re.S)
    for link in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', link):
            continue
        path, _, anchor = link.partition('#')
        target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(target):
            print('%s: %s (no such file)' % (f, link)); bad += 1
        elif anchor and target.endswith('.md') and anchor not in slugs(target):
            print('%s: %s (no such heading)' % (f, link)); bad += 1
sys.exit(1 if bad else 0)
PY
