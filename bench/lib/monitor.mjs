/**
 * Counts the commands clients send to Redis, as Redis sees them: a MONITOR connection
 * reports every command, and marks those run from inside a Lua script as `[db lua]`, so
 * client commands (network round trips) can be told apart from the script's own calls.
 * Used only in a short dedicated phase: MONITOR slows Redis down.
 */
import { connect } from 'node:net';

/** Starts monitoring; `stop()` resolves to `{ total, byCommand }` of client-sent commands. */
export async function monitorCommands(port) {
  const socket = connect({ host: '127.0.0.1', port });
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const byCommand = new Map();
  let total = 0;
  let buffer = '';
  let ready = false;
  let onReady;
  const readyPromise = new Promise((r) => {
    onReady = r;
  });
  socket.setEncoding('utf8');
  socket.on('data', (chunk) => {
    buffer += chunk;
    let nl = buffer.indexOf('\r\n');
    while (nl !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 2);
      nl = buffer.indexOf('\r\n');
      if (!ready) {
        if (line === '+OK') {
          ready = true;
          onReady();
        }
        continue;
      }
      // +1700000000.123456 [0 127.0.0.1:50000] "evalsha" "..." ...
      const close = line.indexOf(']');
      const open = line.indexOf('[');
      if (open === -1 || close === -1) continue;
      if (line.slice(open, close).includes('lua')) continue;
      const q1 = line.indexOf('"', close);
      const q2 = line.indexOf('"', q1 + 1);
      const name = line.slice(q1 + 1, q2).toLowerCase();
      total++;
      byCommand.set(name, (byCommand.get(name) ?? 0) + 1);
    }
  });
  socket.write('MONITOR\r\n');
  await readyPromise;
  return {
    async stop() {
      // Give the last replies a moment to arrive, then close.
      await new Promise((r) => setTimeout(r, 100));
      socket.destroy();
      return { total, byCommand: Object.fromEntries(byCommand) };
    },
  };
}
