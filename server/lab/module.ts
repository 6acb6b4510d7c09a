import type { AppModule } from "../modules.ts";
import { registerLab } from "./lab.handlers.ts";

/** The consistency lab as an optional module: the server imports this file only when LAB=1. */
export const labModule: AppModule = (ctx) => registerLab(ctx);
