/** The demo world every fresh install starts with, so the badges are alive at once. */
export interface SeedConversation {
  kind: "direct" | "group";
  title?: string;
  members: string[];
  /** [sender, text] in order; seq is the position + 1. */
  messages: [string, string][];
  /** Read cursors beyond each member's own last message (default: their last own message). */
  readUpTo?: Record<string, number>;
}

export const demoUsers = ["alice", "bob", "carol", "dave"];

/** Shared by the demo accounts and shown on the sign-in page: they are for workshops, never for real use. */
export const DEMO_PASSWORD = "tally-demo";

export const demoConversations: SeedConversation[] = [
  {
    kind: "direct",
    members: ["alice", "bob"],
    messages: [
      ["bob", "Morning! Did the deploy go out?"],
      ["alice", "Yes, all green."],
      ["bob", "Nice. The badge on my phone said 3 but the list said 1 again…"],
      ["bob", "Is that the drift thing you keep talking about?"],
    ],
    readUpTo: { bob: 4 },
  },
  {
    kind: "group",
    title: "Weekend plans",
    members: ["alice", "bob", "carol", "dave"],
    messages: [
      ["carol", "Hike on Saturday?"],
      ["dave", "I'm in."],
      ["bob", "Only if there is cake at the top."],
      ["carol", "There is always cake."],
      ["dave", "Meet at 9 at the station?"],
    ],
    readUpTo: { alice: 2, bob: 5, carol: 5 },
  },
  {
    kind: "direct",
    members: ["alice", "carol"],
    messages: [
      ["carol", "Can you review my Lua script later?"],
      ["alice", "Sure, send it over."],
    ],
    readUpTo: { carol: 2 },
  },
  {
    kind: "direct",
    members: ["bob", "dave"],
    messages: [["dave", "Lunch?"]],
  },
];
