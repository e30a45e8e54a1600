// What the browser drivers share: Debian's Chromium (not a Playwright download) with the flags
// that let it run headless as root in a container, and their one-line JSON report.
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run'];

// Writes the driver's report (one line of JSON) once; later calls are ignored, so a watchdog
// and the normal end cannot both print.
let printed = false;
export function emit(obj) {
  if (printed) return;
  printed = true;
  process.stdout.write(JSON.stringify(obj) + '\n');
}
