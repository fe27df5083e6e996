// What the browser tests share: where the binary, the artifacts and chromium are, a
// temporary directory, running the binary, and opening a page that records console
// errors, exceptions and network requests (a self-contained page makes none).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const bin = path.resolve(root, process.env.SNAILTRAIL_BIN || 'build/bin/snailtrail');
export const artifacts = path.resolve(root, process.env.SNAILTRAIL_ARTIFACTS || 'build/browser-artifacts');
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

// A new temporary directory named after the test file.
export function workDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `snailtrail-${prefix}-`));
}

// Runs the binary from the repository root; its stdout (stderr dropped).
export function runBinary(...args) {
  return execFileSync(bin, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

// Debian's chromium, headless; the artifacts directory made.
export async function launchBrowser() {
  fs.mkdirSync(artifacts, { recursive: true });
  return chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
}

// Opens `file` once the page says it is drawn (body[data-ready]); what went wrong on it
// (`problems`), the URLs it asked for (`requests`) and the time to load and draw.
export async function openPage(browser, file, viewport = { width: 1400, height: 900 }) {
  const page = await browser.newPage({ viewport });
  const problems = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${e.message}`));
  page.on('request', (r) => requests.push(r.url()));
  const t0 = Date.now();
  await page.goto(pathToFileURL(file).href);
  await page.waitForSelector('body[data-ready]');
  return { page, problems, requests, loadMs: Date.now() - t0 };
}
