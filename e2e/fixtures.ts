import {
  test as base,
  expect,
  type APIRequestContext,
  type APIResponse,
  type BrowserContext,
  type Page,
} from "@playwright/test";
import { freePort } from "../server/embedded/ports.ts";
import type { ConversationDTO, SessionResponse, Snapshot, UserDTO } from "../server/contracts/index.ts";
import {
  BADGE_MISMATCH_BINDING,
  installBadgeRecorder,
  installBadgeSumCheck,
  installWindowControl,
} from "./support/browser-scripts.ts";
import { readEnvironment, type E2eEnvironment } from "./support/environment.ts";
import { appShell, blur, hide, lookAt, openConversation } from "./support/tally-page.ts";
import { instanceDataDir, startTallyServer, type TallyServer } from "./support/tally-server.ts";

/** Where a new tab stands: looked at (and brought to the front), hidden behind another tab, or on screen unfocused. */
export type TabWindow = "looking" | "hidden" | "blurred";

/** One person: a browser context of their own (their own cookie jar), signed in. */
export interface TestUser extends UserDTO {
  token: string;
  context: BrowserContext;
  /**
   * A new tab on `server` (a base URL), signed in and showing the app; then, when asked, put in that `window`
   * state and with the conversation `open` opened, in that order.
   */
  openTab(server: string, options?: { window?: TabWindow; open?: number }): Promise<Page>;
  /** The user's unread state as the server has it, read through `server`. */
  snapshot(server?: string): Promise<Snapshot>;
  /**
   * Creates a conversation through the API (direct with one member, group with more). A direct conversation is
   * then started by the other member too, when the test signed them up, so it is in both lists before its first
   * message, as when both open it (sign-in-and-create.spec.ts creates one from the UI, the creator's alone).
   */
  createConversation(memberNames: string[], title?: string): Promise<ConversationDTO>;
}

interface TestFixtures {
  /** Signs in a new user named uniqueName(prefix) in a fresh browser context; contexts close after the test. */
  signUp(prefix: string): Promise<TestUser>;
  /** Signs `user` in again in a fresh browser context: another device, with a session of its own. */
  signIn(user: Pick<UserDTO, "name">): Promise<TestUser>;
  /** New users signed up as signUp("alice") and so on, for the tests that ask for them. */
  alice: TestUser;
  bob: TestUser;
  carol: TestUser;
  /** A new browser context with the window control and the badge recorder, signed in as nobody. */
  newContext(): Promise<BrowserContext>;
  /**
   * A Tally instance of the test's own, on a free port and the run's database and Redis, for tests that stop
   * servers; stopped after the test.
   */
  startServer(name: string, env?: Record<string, string>): Promise<RestartableServer>;
}

export interface RestartableServer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
  /** A crash: SIGKILL, nothing shut down cleanly. */
  kill(): Promise<void>;
  /** Starts it again on the same port (stopping it first if it still runs). */
  restart(): Promise<void>;
}

interface WorkerFixtures {
  env: E2eEnvironment;
}

export const test = base.extend<TestFixtures, WorkerFixtures>({
  env: [
    // eslint-disable-next-line no-empty-pattern -- Playwright requires a destructuring pattern here.
    async ({}, use) => {
      await use(readEnvironment());
    },
    { scope: "worker" },
  ],

  baseURL: async ({ env }, use) => {
    await use(env.serverA);
  },

  newContext: async ({ browser }, use) => {
    const contexts: BrowserContext[] = [];
    // Every page of every test checks the badge against its rows after each DOM update (installBadgeSumCheck).
    const mismatches: { app: number; rows: number; url: string }[] = [];
    await use(async () => {
      const context = await browser.newContext();
      contexts.push(context);
      await context.exposeBinding(BADGE_MISMATCH_BINDING, (_source, sample: (typeof mismatches)[number]) => {
        mismatches.push(sample);
      });
      await context.addInitScript(installWindowControl);
      await context.addInitScript(installBadgeRecorder);
      await context.addInitScript(installBadgeSumCheck);
      return context;
    });
    await Promise.allSettled(contexts.map((context) => context.close()));
    expect(mismatches, "states where a page's app badge differed from the sum of its rows").toEqual([]);
  },

  startServer: async ({ env }, use, testInfo) => {
    const running = new Set<TallyServer>();
    await use(async (name, extraEnv) => {
      const port = await freePort();
      const start = async (): Promise<TallyServer> => {
        const server = await startTallyServer({
          name,
          port,
          databaseUrl: env.databaseUrl,
          redis: env.redisUrl,
          dataDir: instanceDataDir(env.tmpDir, `${name}-${testInfo.testId}`),
          ...(extraEnv ? { env: extraEnv } : {}),
        });
        running.add(server);
        return server;
      };
      let current = await start();
      return {
        url: current.url,
        port,
        stop: async () => {
          await current.stop();
          running.delete(current);
        },
        kill: async () => {
          await current.kill("SIGKILL");
          running.delete(current);
        },
        restart: async () => {
          await current.stop();
          running.delete(current);
          current = await start();
        },
      };
    });
    await Promise.allSettled([...running].map((server) => server.stop()));
  },

  signUp: async ({ env, newContext }, use) => {
    await use(async (prefix) => signedIn(env, await newContext(), "/api/users", uniqueName(prefix)));
  },

  signIn: async ({ env, newContext }, use) => {
    await use(async (user) => signedIn(env, await newContext(), "/api/session", user.name));
  },

  alice: async ({ signUp }, use) => {
    await use(await signUp("alice"));
  },
  bob: async ({ signUp }, use) => {
    await use(await signUp("bob"));
  },
  carol: async ({ signUp }, use) => {
    await use(await signUp("carol"));
  },
});

/** The API requests of the users this worker signed in, by name in lower case: createConversation's other side. */
const requestsOf = new Map<string, { request: APIRequestContext; headers: Record<string, string> }>();

/** Signs `name` up or in (`path`) through `context`, whose pages are then signed in too. */
async function signedIn(
  env: E2eEnvironment,
  context: BrowserContext,
  path: "/api/users" | "/api/session",
  name: string,
): Promise<TestUser> {
  const session = await json<SessionResponse>(
    // The answer's cookie lands in the context, so its pages are signed in too (on every port of 127.0.0.1).
    await context.request.post(`${env.serverA}${path}`, { data: { name, password: E2E_PASSWORD } }),
  );
  const request: APIRequestContext = context.request;
  const headers = { authorization: `Bearer ${session.token}` };
  const placements: Record<TabWindow, (page: Page) => Promise<void>> = { looking: lookAt, hidden: hide, blurred: blur };
  requestsOf.set(session.user.name.toLowerCase(), { request, headers });
  const create = async (as: { request: APIRequestContext; headers: Record<string, string> }, data: object) =>
    (
      await json<{ conversation: ConversationDTO }>(
        await as.request.post(`${env.serverA}/api/conversations`, { headers: as.headers, data }),
      )
    ).conversation;
  return {
    ...session.user,
    token: session.token,
    context,
    async openTab(server, options = {}) {
      const page = await context.newPage();
      await page.goto(server);
      await expect(appShell(page)).toBeVisible();
      if (options.window !== undefined) await placements[options.window](page);
      if (options.open !== undefined) await openConversation(page, options.open);
      return page;
    },
    async snapshot(server = env.serverA) {
      // maxRetries: a read, retried on ECONNRESET (a keep-alive connection closed as it is reused).
      return json<Snapshot>(await request.get(`${server}/api/conversations`, { headers, maxRetries: 2 }));
    },
    async createConversation(memberNames, title) {
      const conversation = await create(
        { request, headers },
        title === undefined ? { memberNames } : { memberNames, title },
      );
      const other = conversation.kind === "direct" ? requestsOf.get(memberNames[0]!.toLowerCase()) : undefined;
      if (other) await create(other, { memberNames: [name] });
      return conversation;
    },
  };
}

export { expect };

/** The password of every account `signUp` makes. */
export const E2E_PASSWORD = "e2e-password-1234";

async function json<T>(response: APIResponse): Promise<T> {
  const text = await response.text();
  if (!response.ok()) throw new Error(`${response.url()} answered ${response.status()}: ${text}`);
  return JSON.parse(text) as T;
}

/** `<prefix>_<8 random letters>`: unique per test, so tests never see each other's users or conversations. */
export function uniqueName(prefix: string): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz";
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `${prefix}_${Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("")}`;
}
