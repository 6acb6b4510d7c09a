/** What stands in for a deleted message: in its conversation's row (the last message), and in its bubble. */
export function deletedWords(own: boolean, senderName: string): string {
  return own ? "You deleted a message" : `${senderName} deleted a message`;
}

export function deletedBubbleWords(own: boolean): string {
  return own ? "You deleted this message." : "This message was deleted.";
}
