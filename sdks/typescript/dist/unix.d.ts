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
/** The longest socket path accepted, in bytes (the kernel's `sun_path` holds 108; binding happens at a longer staging path first). */
export declare const MAX_SOCKET_PATH_BYTES = 80;
/** One socket path through its life: {@link OwnerSocket.stage}, {@link OwnerSocket.place}, {@link OwnerSocket.remove}. */
export declare class OwnerSocket {
    /** The socket's path, its directory resolved once staged. */
    path: string;
    private staging;
    private identity;
    /** @param path where the socket goes */
    constructor(path: string);
    /** Checks the path and its directory; resolves to where to bind. */
    stage(): Promise<string>;
    /** Makes the bound socket 0600 and moves it into place. */
    place(): void;
    /** Removes the socket if it is still the one placed (and any staging a failed start left). */
    remove(): void;
}
