import type { Server, Socket } from "socket.io";
import type { ClientToServerEvents, InterServerEvents, ServerToClientEvents, SocketData } from "../contracts/index.ts";

/** The chat's Socket.IO server and sockets, typed by the contract. */
export type TallyServer = Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
export type TallySocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
