import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import "./globals.css";

/**
 * Rendered per request: the Content-Security-Policy nonce (server/http/headers.ts) is new on every request and
 * Next.js puts it on its scripts only when it renders the page then.
 */
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: "Tally",
  description: "A chat whose unread badges never lie.",
  applicationName: "Tally",
  manifest: "/manifest.webmanifest",
  icons: { icon: "/icon.svg", apple: "/icon.svg" },
};

export const viewport: Viewport = {
  width: "device-width",
  initialScale: 1,
  colorScheme: "light dark",
  themeColor: [
    { media: "(prefers-color-scheme: light)", color: "#ffffff" },
    { media: "(prefers-color-scheme: dark)", color: "#15171c" },
  ],
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
