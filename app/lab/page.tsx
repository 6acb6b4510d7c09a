import type { Metadata } from "next";
import { LabApp } from "@/components/lab/LabApp";
import "./lab.css";

export const metadata: Metadata = { title: "Consistency lab · Tally" };

export default function LabPage() {
  return <LabApp />;
}
