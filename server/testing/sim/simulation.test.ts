import { describe, expect, it } from "vitest";
import { CLUSTER_FAULTS, FAULTS, heirOf, scenario } from "./simulation.ts";

const options = {
  seed: 42,
  ops: 500,
  users: 10,
  tabsPerUser: 2,
  groups: 3,
  directs: 8,
  faultRate: 0.03,
  faults: FAULTS,
  everyFault: false,
  instances: 2,
};

describe("the simulation's plan", () => {
  it("comes from the seed alone: names, titles, conversations and operations", () => {
    const plan = scenario(options);
    expect(scenario(options)).toEqual(plan);
    expect(scenario({ ...options, seed: 43 }).ops).not.toEqual(plan.ops);
    expect(plan.users).toEqual(Array.from({ length: 10 }, (_, i) => `s42-u${i}`));
    expect(plan.conversations.filter((c) => c.kind === "group").map((c) => c.title)).toEqual([
      "s42 group 0",
      "s42 group 1",
      "s42 group 2",
    ]);
  });

  it("grows by appending, so a shorter plan is a prefix of a longer one (a failure is shrunk that way)", () => {
    expect(scenario({ ...options, ops: 500 }).ops.slice(0, 120)).toEqual(scenario({ ...options, ops: 120 }).ops);
  });

  it("with everyFault, meets every kind of fault at least once and plans the same traffic around them", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const base = { ...options, seed, ops: 150, faultRate: 0.01, faults: CLUSTER_FAULTS };
      const plain = scenario(base).ops;
      const every = scenario({ ...base, everyFault: true }).ops;
      const faults = (ops: typeof plain) => ops.flatMap((op) => (op.kind === "fault" ? [op.fault] : []));
      expect(new Set(faults(every))).toEqual(new Set(CLUSTER_FAULTS));
      expect(every).toHaveLength(plain.length + CLUSTER_FAULTS.length);
      const traffic = (ops: typeof plain) => ops.filter((op) => op.kind !== "fault");
      expect(traffic(every)).toEqual(traffic(plain));
    }
  });

  it("adds, leaves, removals and deletes, and only where the member may", () => {
    let removals = 0;
    let creatorsLeaving = 0;
    let byHeirs = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const plan = scenario({ ...options, seed });
      const convs = plan.conversations.map((c) => ({
        ...c,
        founder: c.creator,
        members: new Set(c.members),
        left: new Set<number>(),
        joined: new Map<number, number>(),
        gone: false,
      }));
      const kinds = new Set(plan.ops.map((op) => op.kind));
      expect(kinds).toContain("leave");
      expect(kinds).toContain("delete");
      expect(kinds).toContain("add");
      for (const op of plan.ops) {
        if (op.kind === "create") {
          expect(op.conv).toBe(convs.length);
          convs.push({
            ...op.conversation,
            founder: op.conversation.creator,
            members: new Set(op.conversation.members),
            left: new Set<number>(),
            joined: new Map<number, number>(),
            gone: false,
          });
          continue;
        }
        if (!("conv" in op) || op.conv === null) continue;
        const c = convs[op.conv]!;
        expect(!c.gone && c.members.has(op.user), `${op.kind} by ${op.user} in c${op.conv}`).toBe(true);
        if (op.kind === "add") {
          expect(c.kind).toBe("group");
          expect(c.members.has(op.other) || c.left.has(op.other), `add ${op.other} to c${op.conv}`).toBe(false);
          c.members.add(op.other);
          c.joined.set(op.other, plan.ops.indexOf(op) + 1);
        }
        if (op.kind === "leave") {
          expect(c.kind).toBe("group");
          if (c.creator === op.user && c.members.size > 1) creatorsLeaving++;
          c.members.delete(op.user);
          c.left.add(op.user);
          // The owner's leave hands the group to the member who came first.
          if (c.creator === op.user) c.creator = heirOf([...c.members], c.joined);
        }
        if ((op.kind === "remove" || (op.kind === "delete" && c.kind === "group")) && op.user !== c.founder) byHeirs++;
        if (op.kind === "remove") {
          removals++;
          expect(c.kind).toBe("group");
          expect(c.creator).toBe(op.user);
          expect(op.other !== op.user && c.members.has(op.other), `remove ${op.other} from c${op.conv}`).toBe(true);
          c.members.delete(op.other);
          c.left.add(op.other);
        }
        if (op.kind === "delete") {
          expect(c.kind === "direct" || c.creator === op.user).toBe(true);
          c.gone = true;
        }
      }
    }
    expect(removals).toBeGreaterThan(20);
    expect(creatorsLeaving).toBeGreaterThan(5);
    // Removals and deletions by whoever the group was handed to.
    expect(byHeirs).toBeGreaterThan(0);
  });

  it("mutes, unmutes, marks and mentions, where the member may, from the plan's own state", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const plan = scenario({ ...options, seed });
      const convs = plan.conversations.map((c) => ({ ...c, members: new Set(c.members), gone: false }));
      const muted = new Set<string>();
      const kinds = new Set<string>();
      for (const op of plan.ops) {
        if (op.kind === "create")
          convs.push({ ...op.conversation, members: new Set(op.conversation.members), gone: false });
        if (op.kind === "add") convs[op.conv]!.members.add(op.other);
        if (op.kind === "leave") convs[op.conv]!.members.delete(op.user);
        if (op.kind === "remove") convs[op.conv]!.members.delete(op.other);
        if (op.kind === "delete") convs[op.conv]!.gone = true;
        if (op.kind === "mute") {
          kinds.add(op.muted ? "mute" : "unmute");
          const k = `${op.user}:${op.conv}`;
          expect(op.muted).toBe(!muted.has(k));
          if (op.muted) muted.add(k);
          else muted.delete(k);
        }
        if (op.kind === "mark") kinds.add("mark");
        if (op.kind === "send" && op.mention) {
          kinds.add(op.mention.toLowerCase() === "@all" ? "@all" : "@name");
          const c = convs[op.conv]!;
          if (op.mention.toLowerCase() === "@all") expect(c.kind).toBe("group");
          else {
            const named = plan.users.findIndex((u) => `@${u}` === op.mention!.toLowerCase());
            expect(named).not.toBe(op.user);
            expect(c.members.has(named)).toBe(true);
          }
        }
      }
      expect([...kinds].sort()).toEqual(["@all", "@name", "mark", "mute", "unmute"]);
    }
  });
});
