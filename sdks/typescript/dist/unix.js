/**
 * A Unix socket only its owner can reach, for a service a host on the same
 * machine binds as `unix:/path`: the same rules as hookwire's own services.
 *
 * The directory must belong to this user and be writable by nobody else
 * (another user could replace the socket); the socket is bound in a
 * private directory beside its final path, made 0600, and renamed into
 * place, so it is never reachable with looser permissions. A stale socket
 * (nobody answers on it) is replaced; a live one, or a file that is not a
 * socket, is refused. The socket is removed on stop if it is still the one
 * this process placed.
 *
 * @module
 */
import { chmodSync, lstatSync, mkdtempSync, realpathSync, renameSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, dirname, join } from 'node:path';
/** The longest socket path accepted, in bytes (the kernel's `sun_path` holds 108; binding happens at a longer staging path first). */
export const MAX_SOCKET_PATH_BYTES = 80;
/** One socket path through its life: {@link OwnerSocket.stage}, {@link OwnerSocket.place}, {@link OwnerSocket.remove}. */
export class OwnerSocket {
    /** The socket's path, its directory resolved once staged. */
    path;
    staging;
    identity;
    /** @param path where the socket goes */
    constructor(path) {
        this.path = path;
    }
    /** Checks the path and its directory; resolves to where to bind. */
    async stage() {
        const path = this.path;
        if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
            throw new Error(`socket path ${path}: longer than ${MAX_SOCKET_PATH_BYTES} bytes (use a shorter path, e.g. under $XDG_RUNTIME_DIR)`);
        }
        if (basename(path) === '' || path.endsWith('/'))
            throw new Error(`socket path ${path} names no file`);
        const parent = realpathSync(dirname(path));
        this.path = join(parent, basename(path));
        const dir = statSync(parent);
        if ((dir.mode & 0o022) !== 0) {
            throw new Error(`socket path ${path}: its directory ${parent} is group- or world-writable (mode ${(dir.mode & 0o7777).toString(8)}): ` +
                'another user could replace the socket; use a directory only you can write to');
        }
        const uid = process.geteuid?.() ?? dir.uid;
        if (dir.uid !== uid) {
            throw new Error(`socket path ${path}: its directory ${parent} belongs to user ${dir.uid}, not to this process's ${uid}`);
        }
        await checkExisting(this.path);
        this.staging = mkdtempSync(join(parent, '.hookwire-sock-'));
        return join(this.staging, 's');
    }
    /** Makes the bound socket 0600 and moves it into place. */
    place() {
        if (this.staging === undefined)
            throw new Error('stage() first');
        const staged = join(this.staging, 's');
        chmodSync(staged, 0o600);
        renameSync(staged, this.path);
        rmdirSync(this.staging);
        this.staging = undefined;
        const placed = lstatSync(this.path);
        this.identity = [placed.dev, placed.ino];
    }
    /** Removes the socket if it is still the one placed (and any staging a failed start left). */
    remove() {
        if (this.staging !== undefined) {
            try {
                unlinkSync(join(this.staging, 's'));
            }
            catch {
                // not bound
            }
            rmdirSync(this.staging);
            this.staging = undefined;
        }
        if (this.identity === undefined)
            return;
        try {
            const now = lstatSync(this.path);
            if (now.dev === this.identity[0] && now.ino === this.identity[1])
                unlinkSync(this.path);
        }
        catch {
            // already gone
        }
        this.identity = undefined;
    }
}
/** Refuses an existing `path` unless it is a stale socket. */
async function checkExisting(path) {
    let info;
    try {
        info = lstatSync(path);
    }
    catch {
        return;
    }
    if (!info.isSocket())
        throw new Error(`socket path ${path} exists and is not a socket: refusing to replace it`);
    const live = await new Promise((resolve, reject) => {
        const probe = connect(path);
        probe.once('connect', () => {
            probe.destroy();
            resolve(true);
        });
        probe.once('error', (e) => {
            probe.destroy();
            if (e.code === 'ECONNREFUSED')
                resolve(false);
            else
                reject(new Error(`socket path ${path} exists and cannot be probed: ${e.message}`));
        });
    });
    if (live)
        throw new Error(`socket path ${path}: another process is listening on it`);
}
