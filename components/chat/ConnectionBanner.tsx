"use client";

import { useEffect, useState, useSyncExternalStore } from "react";
import { useChatStore } from "@/components/providers/ChatProvider";
import { selectConnected, selectQueuedCount } from "@/components/store/selectors";
import { connectionBanner, FIRST_CONNECT_GRACE_MS } from "./connection-banner";

function subscribeOnline(onChange: () => void): () => void {
  window.addEventListener("online", onChange);
  window.addEventListener("offline", onChange);
  return () => {
    window.removeEventListener("online", onChange);
    window.removeEventListener("offline", onChange);
  };
}

/**
 * Says when the page is not connected and how many messages wait. The status region is always there (empty while
 * connected), so screen readers announce the banner when it appears.
 */
export function ConnectionBanner() {
  const connected = useChatStore(selectConnected);
  const queued = useChatStore(selectQueuedCount);
  const online = useSyncExternalStore(
    subscribeOnline,
    () => navigator.onLine,
    () => true,
  );
  const [everConnected, setEverConnected] = useState(connected);
  if (connected && !everConnected) setEverConnected(true);
  const [firstConnectSlow, setFirstConnectSlow] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setFirstConnectSlow(true), FIRST_CONNECT_GRACE_MS);
    return () => clearTimeout(timer);
  }, []);

  const banner = connectionBanner({ connected, everConnected, firstConnectSlow, online, queued });
  return (
    <div className="connection-region" role="status">
      {banner && (
        <p className={`connection-banner ${banner.state}`} data-testid="connection-banner" data-state={banner.state}>
          {banner.text}
        </p>
      )}
    </div>
  );
}
